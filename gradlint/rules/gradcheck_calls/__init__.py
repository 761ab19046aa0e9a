"""Rules about calls of gradcheck and gradgradcheck: their inputs, options, results and the
code they check."""
