"""The maps tool family: load data, style and label layers, arrange the layer tree, export a finished map."""
