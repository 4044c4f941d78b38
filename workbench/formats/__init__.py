"""Date formats of the workbench's languages where Django's own do not fit (FORMAT_MODULE_PATH):
English keeps the compact `2025-03-01 14:05`; Chinese takes Django's `2025年3月1日 14:05`."""
