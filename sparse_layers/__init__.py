"""Weight sparsification for TF 1.13 graph code.

Subpackages `variational_dropout` and `l0_regularization` each provide
stateless train/eval ops (`nn`), layers (`layers`) and RNN cells (`rnn`);
`techniques` is the registry of the two techniques and of the sparse
`(theta, aux)` pairs of a graph; `common` holds the shared math and
constants, `losses` the training penalties, `report` the sparsity reports
and `strip` the conversion to plain dense weights.
"""
