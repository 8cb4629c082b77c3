"""Small services every part of the plugin shares: logging, settings, secrets, paths, tr()."""
