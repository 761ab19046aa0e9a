"""gradlint: find gradient bugs in custom PyTorch autograd code, and prove gradients."""

__version__ = "0.1.0"
