"""DWARF constants used by the reader (DWARF 5, section 7; GNU extensions where noted).

Only the values this reader acts on are listed.
"""

from __future__ import annotations

# Tags (DWARF 5, 7.5.3)
DW_TAG_class_type = 0x02
DW_TAG_enumeration_type = 0x04
DW_TAG_lexical_block = 0x0B
DW_TAG_compile_unit = 0x11
DW_TAG_structure_type = 0x13
DW_TAG_union_type = 0x17
DW_TAG_inlined_subroutine = 0x1D
DW_TAG_subprogram = 0x2E
DW_TAG_namespace = 0x39
DW_TAG_partial_unit = 0x3C
DW_TAG_skeleton_unit = 0x4A

# Attributes (7.5.4)
DW_AT_sibling = 0x01
DW_AT_name = 0x03
DW_AT_stmt_list = 0x10
DW_AT_low_pc = 0x11
DW_AT_high_pc = 0x12
DW_AT_comp_dir = 0x1B
DW_AT_abstract_origin = 0x31
DW_AT_decl_file = 0x3A
DW_AT_decl_line = 0x3B
DW_AT_declaration = 0x3C
DW_AT_specification = 0x47
DW_AT_ranges = 0x55
DW_AT_call_column = 0x57
DW_AT_call_file = 0x58
DW_AT_call_line = 0x59
DW_AT_linkage_name = 0x6E
DW_AT_str_offsets_base = 0x72
DW_AT_addr_base = 0x73
DW_AT_rnglists_base = 0x74
DW_AT_dwo_name = 0x76
DW_AT_MIPS_linkage_name = 0x2007
DW_AT_GNU_dwo_name = 0x2130
DW_AT_GNU_dwo_id = 0x2131
DW_AT_GNU_ranges_base = 0x2132
DW_AT_GNU_addr_base = 0x2133
DW_AT_GNU_discriminator = 0x2136

# Forms (7.5.6)
DW_FORM_addr = 0x01
DW_FORM_block2 = 0x03
DW_FORM_block4 = 0x04
DW_FORM_data2 = 0x05
DW_FORM_data4 = 0x06
DW_FORM_data8 = 0x07
DW_FORM_string = 0x08
DW_FORM_block = 0x09
DW_FORM_block1 = 0x0A
DW_FORM_data1 = 0x0B
DW_FORM_flag = 0x0C
DW_FORM_sdata = 0x0D
DW_FORM_strp = 0x0E
DW_FORM_udata = 0x0F
DW_FORM_ref_addr = 0x10
DW_FORM_ref1 = 0x11
DW_FORM_ref2 = 0x12
DW_FORM_ref4 = 0x13
DW_FORM_ref8 = 0x14
DW_FORM_ref_udata = 0x15
DW_FORM_indirect = 0x16
DW_FORM_sec_offset = 0x17
DW_FORM_exprloc = 0x18
DW_FORM_flag_present = 0x19
DW_FORM_strx = 0x1A
DW_FORM_addrx = 0x1B
DW_FORM_ref_sup4 = 0x1C
DW_FORM_strp_sup = 0x1D
DW_FORM_data16 = 0x1E
DW_FORM_line_strp = 0x1F
DW_FORM_ref_sig8 = 0x20
DW_FORM_implicit_const = 0x21
DW_FORM_loclistx = 0x22
DW_FORM_rnglistx = 0x23
DW_FORM_ref_sup8 = 0x24
DW_FORM_strx1 = 0x25
DW_FORM_strx2 = 0x26
DW_FORM_strx3 = 0x27
DW_FORM_strx4 = 0x28
DW_FORM_addrx1 = 0x29
DW_FORM_addrx2 = 0x2A
DW_FORM_addrx3 = 0x2B
DW_FORM_addrx4 = 0x2C
DW_FORM_GNU_addr_index = 0x1F01
DW_FORM_GNU_str_index = 0x1F02
DW_FORM_GNU_ref_alt = 0x1F20
DW_FORM_GNU_strp_alt = 0x1F21

# Unit types (7.5.1)
DW_UT_compile = 0x01
DW_UT_type = 0x02
DW_UT_partial = 0x03
DW_UT_skeleton = 0x04
DW_UT_split_compile = 0x05
DW_UT_split_type = 0x06

# Range list entries (7.25)
DW_RLE_end_of_list = 0x00
DW_RLE_base_addressx = 0x01
DW_RLE_startx_endx = 0x02
DW_RLE_startx_length = 0x03
DW_RLE_offset_pair = 0x04
DW_RLE_base_address = 0x05
DW_RLE_start_end = 0x06
DW_RLE_start_length = 0x07

# Line number program (6.2.5)
DW_LNS_copy = 0x01
DW_LNS_advance_pc = 0x02
DW_LNS_advance_line = 0x03
DW_LNS_set_file = 0x04
DW_LNS_set_column = 0x05
DW_LNS_negate_stmt = 0x06
DW_LNS_set_basic_block = 0x07
DW_LNS_const_add_pc = 0x08
DW_LNS_fixed_advance_pc = 0x09
DW_LNS_set_prologue_end = 0x0A
DW_LNS_set_epilogue_begin = 0x0B
DW_LNS_set_isa = 0x0C
DW_LNE_end_sequence = 0x01
DW_LNE_set_address = 0x02
DW_LNE_define_file = 0x03
DW_LNE_set_discriminator = 0x04

# Line header entry content types (6.2.4.1)
DW_LNCT_path = 0x1
DW_LNCT_directory_index = 0x2

# Package index section identifiers (7.3.5.3); version 2 (GNU) numbers differ.
DW_SECT_INFO = 1
DW_SECT_ABBREV = 3
DW_SECT_LINE = 4
DW_SECT_STR_OFFSETS = 6
DW_SECT_RNGLISTS = 8
