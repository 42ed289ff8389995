"""Floor 4: export - :mod:`.tflite` (``export_tflite``: float and 8-bit
TFLite models of cell stacks), made of :mod:`.stack` (a cell stack and its
trained values), :mod:`.eval_graph` (the unrolled evaluation graph) and
:mod:`.graphdef` (GraphDef rewrites and the conversion); :mod:`.runner`
(``TFLiteRunner``, which runs the files, and ``open_interpreter``, which
opens them), :mod:`.tflite_file` (a file's flatbuffer read with the
standard library, and ``verify``, which checks it before any interpreter
reads it), :mod:`.sparse_storage` (pruned weights stored in TFLite's
sparse format, int8 weights; its format and encodings are
:mod:`.sparse_format`'s, its rewrite :mod:`.sparse_rewrite`'s) and
:mod:`.strip` (sparse pairs to plain dense weights). Imports floors 0-3
only."""
