"""Rules about custom `torch.autograd.Function`s: what forward saves and marks, what
backward returns and reads, how the Function is applied."""
