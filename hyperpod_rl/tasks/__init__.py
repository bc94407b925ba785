"""Task plug-ins."""
