"""Code parsing in the verifiers is serialised: the AST builder's shared state (CPython
gh-106905) must never see two threads at once, or a batch scored over the sandbox's threads
can fail a correct item with SystemError."""

from __future__ import annotations

import threading

from verifiers import _ast
from verifiers.code import harness as code_harness
from verifiers.code import verifier as code


def test_parse_waits_while_another_thread_holds_the_lock():
    done = threading.Event()

    def parse_in_thread():
        _ast.parse("x = [[1], [2, [3]]]")
        done.set()

    with _ast.AST_LOCK:
        worker = threading.Thread(target=parse_in_thread)
        worker.start()
        assert not done.wait(0.3)  # blocked: the other thread holds the builder
    assert done.wait(5)
    worker.join()


def test_the_code_verifier_parses_only_through_the_lock():
    for module in (code, code_harness):
        source = open(module.__file__, encoding="utf-8").read()
        assert "ast.parse(" not in source, module.__name__
        assert module.parse is _ast.parse


def test_the_lock_is_reentrant_for_a_finalizer_on_the_same_thread():
    with _ast.AST_LOCK:
        assert _ast.parse("a = 1").body  # would deadlock with a plain Lock
