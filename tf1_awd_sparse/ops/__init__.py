"""The stateless building blocks under the cells: fake quantization
(``fake_quant``) and the fake-quantized LSTM step (``quantized_lstm``).

This package imports only ``tf1_awd_sparse._compat``, ``_checks`` and
``mask_placement``; the cells import it, and the exporter
(``tf1_awd_sparse.quantization``) sits above the cells. The old names
``tf1_awd_sparse.quantization.fake_quant`` / ``.lstm`` are the same modules.
"""
