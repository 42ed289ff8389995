"""The corpus floor: reading and numbering text (data), the synthetic
corpora, and the one place a program's corpus comes from (runtime).

Floors of awd_lm, bottom up: corpus, config, graph, inference, training,
distributed, then the programs (programs/ and awd_lm's top-level modules);
a module imports only its own floor and those below (docs/architecture.md)."""
from tf1_awd_sparse.base import names as _names

# The package's public names (docs/api.md), each imported from its
# module on first use.
__all__, __getattr__, __dir__ = _names.lazy_api(__name__, {
    "tf1_awd_sparse.awd_lm.corpus.data": [
        "read_ptb", "write_ptb", "read_words", "build_vocab", "encode",
        "batchify", "bptt_windows", "DataError", "EOS", "UNK"],
    "tf1_awd_sparse.awd_lm.corpus.synthetic": [
        "make_hmm", "hmm_corpus", "perplexity_floor"],
    "tf1_awd_sparse.awd_lm.corpus.runtime": ["load_corpus",
                                             "session_config"],
})
