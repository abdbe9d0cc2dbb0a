"""Coverage-guided fuzz targets (atheris); see fuzz/README.md."""
