"""What a parameter of a target takes: the kinds ``params`` decides between."""

TENSOR = "tensor"  # a floating tensor; requires grad unless backward returns None for it
INDEX = "index"  # an int64 tensor of indices into another input
MASK = "mask"  # a bool tensor shaped like the first input
INT, FLOAT, BOOL, STR, NONE = "int", "float", "bool", "str", "none"
DEFAULT = "default"  # keep the parameter's default
SIZE = "size"  # a torch.Size (the shape of the first tensor)
INT_TENSOR = "int_tensor"  # a 0-d int64 tensor (a dim saved for backward, read with .item())
DEVICE = "device"  # a torch.device: the CPU
SEQUENCE, CALLABLE, OBJECT = "sequence", "callable", "object"  # cannot be made up
UNSUPPORTED = (SEQUENCE, CALLABLE, OBJECT)
