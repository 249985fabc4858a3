"""linegate: an edge appliance that reads a factory line's logs with a small language model."""

__version__ = "0.1.0"
