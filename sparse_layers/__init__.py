"""Weight sparsification for TF 1.13 graph code.

Subpackages `variational_dropout` and `l0_regularization` each provide
stateless train/eval ops (`nn`), layers (`layers`) and RNN cells (`rnn`);
`common` holds the shared math and constants, `losses` the training
penalties and `report` the sparsity reports.
"""
