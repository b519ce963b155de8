"""DynamoDB's expressions in moto, evaluated with less repeated work and the same answers. About half of the local
endpoint's busy time in a burst went to `UpdateItem` (sampled during `benchmarks.burst`'s same-second burst:
three of them per run), most of it work moto repeats on every request:

- an update expression is parsed twice per request (once to check its names and values, once to run it): the
  syntax tree of an expression is kept, as nothing changes it; the validation, which changes its own deep copy of
  it, gets the copy from the tree's pickle, made once (ten times quicker than `deepcopy` of the tree);
- each of the ten passes the validation makes over that tree builds its map of node types to handlers anew at
  every node, twice (a dict of bound methods, then a tuple of its keys): it is built once per pass; and it asks
  at every node whether it is a node and one to process, through `abc`'s `isinstance`: the answers are kept by the
  node's type (the node classes are fixed, no virtual subclass is ever registered);
- the check that an update expression has at most one SET, REMOVE and ADD clause counts the clauses of the whole
  subtree under every `UpdateExpression` node, which a SET of eight actions nests eight deep: they are counted
  once, at the root, which holds every clause any subtree holds (the same error, for the same expressions);
- a condition expression is split into its tokens on every request, with a list of regular expressions built for
  each token: the tokens (immutable tuples) of an expression are kept, and each parser gets a fresh deque of them.

tests/integration/test_local_endpoint_speedups.py compares the answers with and without them.
"""

from __future__ import annotations

import copy
import pickle
from collections import deque
from functools import lru_cache
from typing import Any

from moto.dynamodb.comparisons import ConditionExpressionParser
from moto.dynamodb.parsing import ast_nodes, expressions, validators
from moto.dynamodb.parsing.validators import ActionCountValidator

EXPRESSIONS_KEPT = 4096  # distinct expressions kept: Tickwork writes a few dozen


def evaluate_expressions_quicker() -> None:
    """Patch moto's expression evaluation as the module docstring says. Idempotent."""
    traverser: Any = getattr(ast_nodes, "DepthFirstTraverser")  # noqa: B009 - untyped in moto
    if getattr(traverser, "_tickwork_quicker", False):
        return
    for cls in _with_subclasses(traverser):
        if "_processing_map" in cls.__dict__:
            cls._processing_map = _kept_per_pass(cls.__dict__["_processing_map"])
    traverser.nodes_to_be_processed = _processed_types
    traverser.traverse_node_recursively = _traverse

    counts = ActionCountValidator.verify_action_counts

    def verify_at_root(self: Any, node: Any) -> Any:
        return counts(self, node) if node.parent is None else node

    ActionCountValidator.verify_action_counts = verify_at_root  # type: ignore[method-assign]

    parser: Any = getattr(expressions, "UpdateExpressionParser")  # noqa: B009 - untyped in moto
    parse = parser.make.__func__

    def parsed(cls: Any, expression: str) -> Any:
        tree = parse(cls, expression)
        tree._tickwork_pickled = pickle.dumps(tree, protocol=pickle.HIGHEST_PROTOCOL)
        return tree

    kept: Any = lru_cache(maxsize=EXPRESSIONS_KEPT)(parsed)
    parser.make = classmethod(kept)
    setattr(validators, "deepcopy", _copy_of_kept_tree)  # noqa: B010 - typed as copy.deepcopy

    lex: Any = ConditionExpressionParser._lex_condition_expression

    @lru_cache(maxsize=EXPRESSIONS_KEPT)
    def tokens_of(expression: str) -> tuple[Any, ...]:
        lexer = ConditionExpressionParser.__new__(ConditionExpressionParser)
        lexer.condition_expression = expression
        return tuple(lex(lexer))

    def lex_kept(self: Any) -> deque[Any]:
        return deque(tokens_of(self.condition_expression))

    ConditionExpressionParser._lex_condition_expression = lex_kept  # type: ignore[method-assign]
    traverser._tickwork_quicker = True


def _copy_of_kept_tree(value: Any, memo: Any = None) -> Any:
    """`deepcopy` in moto's validators: a kept syntax tree from its pickle; anything else by `deepcopy`."""
    pickled = getattr(value, "_tickwork_pickled", None) if memo is None else None
    return pickle.loads(pickled) if pickled is not None else copy.deepcopy(value, memo)  # noqa: S301 - our own pickle


def _kept_per_pass(build: Any) -> Any:
    """A traverser's `_processing_map`, built on its first use and kept on the traverser (one pass)."""

    def processing_map(self: Any) -> Any:
        kept = self.__dict__.get("_tickwork_map")
        if kept is None:
            kept = self.__dict__["_tickwork_map"] = build(self)
        return kept

    return processing_map


def _processed_types(self: Any) -> tuple[type, ...]:
    kept = self.__dict__.get("_tickwork_types")
    if kept is None:
        kept = self.__dict__["_tickwork_types"] = tuple(self._processing_map())
    return kept


_IS_NODE: dict[type, bool] = {}


def _traverse(self: Any, node: Any, child_id: int = -1) -> Any:
    """moto's `DepthFirstTraverser.traverse_node_recursively`, with its two `isinstance` answers kept by type."""
    kind = type(node)
    is_node = _IS_NODE.get(kind)
    if is_node is None:
        is_node = _IS_NODE[kind] = isinstance(node, ast_nodes.Node)  # type: ignore[attr-defined]
    if not is_node:
        return node
    parent_node = node.parent
    children = node.children
    if children is not None:
        for i, child_node in enumerate(children):
            self.pre_processing_of_child(node, i)
            self.traverse_node_recursively(child_node, i)
    processed = self.__dict__.get("_tickwork_processed")
    if processed is None:
        processed = self.__dict__["_tickwork_processed"] = {}
    hit = processed.get(kind)
    if hit is None:
        hit = processed[kind] = isinstance(node, self.nodes_to_be_processed())
    if hit:
        node = self.process(node)
        node.parent = parent_node
        if parent_node:
            parent_node.children[child_id] = node
    return node


def _with_subclasses(cls: Any) -> list[Any]:
    found = [cls]
    for sub in cls.__subclasses__():
        found += _with_subclasses(sub)
    return found
