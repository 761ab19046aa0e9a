"""Rules about code `torch.compile` traces: the Function and custom-op patterns that break
its graph or, on some torch versions, compile to gradients other than eager's."""
