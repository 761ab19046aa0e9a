"""Rules about `torch.library` custom ops: their schemas, registrations, fake
implementations and autograd formulas."""
