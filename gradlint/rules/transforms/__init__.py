"""Rules about autograd Functions applied under torch.func transforms (vmap, grad, jvp...)."""
