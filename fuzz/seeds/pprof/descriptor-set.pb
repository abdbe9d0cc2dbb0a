
Ë	
profile.protoperftools.profiles"æ
Profile2
sample_type (2.perftools.profiles.ValueType*
sample (2.perftools.profiles.Sample,
mapping (2.perftools.profiles.Mapping.
location (2.perftools.profiles.Location.
function (2.perftools.profiles.Function
string_table (	
drop_frames (
keep_frames (

time_nanos	 (
duration_nanos
 (2
period_type (2.perftools.profiles.ValueType
period (
comment (
default_sample_type (
doc_url ("'
	ValueType
type (
unit ("V
Sample
location_id (
value ((
label (2.perftools.profiles.Label"@
Label
key (
str (
num (
num_unit ("Ý
Mapping

id (
memory_start (
memory_limit (
file_offset (
filename (
build_id (
has_functions (
has_filenames (
has_line_numbers	 (
has_inline_frames
 ("v
Location

id (

mapping_id (
address (&
line (2.perftools.profiles.Line
	is_folded ("9
Line
function_id (
line (
column ("_
Function

id (
name (
system_name (
filename (

start_line (bproto3