"""Floor 1: the stateless math under the cells - fake quantization
(:mod:`.fake_quant`), the fake-quantized LSTM step (:mod:`.quantized_lstm`),
the whole-sequence LSTM recurrence and its gradient (:mod:`.lstm_sequence`),
where a graph's per-run ops are placed (:mod:`.mask_placement`) and the
sparse techniques' formulas and op pairs (:mod:`.sparse`). Imports floor 0
only. (Their old names are in :mod:`tf1_awd_sparse.base.names`.)"""
