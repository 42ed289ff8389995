"""``awd-lm generate`` (and ``score``, which reads files alike) refuses a
flag that would do nothing (issue 54, item 6): one line naming the flag
and what it needs, and only flags the program has; what a draw reads is
kept."""
import pytest

from tf1_awd_sparse.awd_lm.programs import generate, score
from support.lm import names_only_its_flags, one_error_line


@pytest.mark.parametrize("program, rest", [
    (score, ["text.txt"]), (generate, ["--num-words", "3"])])
def test_threads_of_a_tflite_file_are_refused(capsys, program, rest):
    line = one_error_line(capsys, lambda: program.parse_args(
        ["--model", "m.tflite", "--threads", "2"] + rest))
    assert line.startswith("error: --threads has no effect here: it needs "
                           "a model directory")
    assert program.parse_args(["--model", "m.tflite"] + rest).threads == 1
    assert program.parse_args(["--model", "run/m", "--threads", "2"]
                              + rest).threads == 2


@pytest.mark.parametrize("flags, flag", [
    (["--top-k", "1", "--temperature", "0.5"], "--temperature"),
    (["--temperature", "0", "--top-k", "5"], "--top-k"),
    (["--temperature", "0", "--seed", "3"], "--seed"),
    (["--top-k", "1", "--seed", "3"], "--seed"),
])
def test_generate_refuses_what_a_greedy_pick_ignores(capsys, flags, flag):
    line = one_error_line(capsys, lambda: generate.parse_args(
        ["--model", "m", "--num-words", "3"] + flags))
    assert line.startswith("error: %s has no effect here: it needs a random "
                           "draw" % flag), line
    names_only_its_flags(line, generate)


def test_generate_keeps_what_a_draw_reads():
    args = generate.parse_args(["--model", "m", "--num-words", "3",
                                "--top-k", "5", "--seed", "3"])
    assert (args.temperature, args.top_k, args.seed) == (1.0, 5, 3)
