"""_fusion: a model traced by torch.fx, its Conv → BatchNorm → add → ReLU chains folded into convgen modules, then
its pre-activations ([torch.cat →] BatchNorm → ReLU, `fuse_pre_activations`) into one pass each, then, where asked,
each ReLU left whose users are all convolutions into those convolutions' loads (`fuse_relus_on_load`).

convgen.torch.convert calls `fuse`; this file knows the graph patterns, convgen.torch the modules. A chain starts at
a call of an exact torch.nn.Conv2d/Conv3d and takes, each only where the value before it has no other user:
  - a BatchNorm of the conv's rank in eval mode with running statistics (folded into the weight and bias),
  - an add of another tensor (operator.add / iadd, torch.add, Tensor.add / add_; the epilogue's residual),
  - a ReLU (nn.ReLU, F.relu, torch.relu, Tensor.relu, in place or not) or ReLU6 (nn.ReLU6, F.relu6, hardtanh(0, 6)).
The fused module runs where the chain's last node ran, so nothing between the conv and that node may write into a
tensor (the conv's input or the residual would be read later than the model read them): such a node ends the chain.
"""
import operator

import torch
import torch.nn.functional as F
from torch import fx, nn

_BATCH_NORMS = {2: nn.BatchNorm2d, 3: nn.BatchNorm3d}

# Adds of two tensors, by (op, target): True where the add writes into its first operand, which must then be the
# chain (writing into the other operand is a change that later readers of it see, and the fused op would not make).
_ADDS = {("call_function", operator.add): False, ("call_function", torch.add): False,
         ("call_method", "add"): False, ("call_function", operator.iadd): True, ("call_method", "add_"): True}

_RELU_FUNCTIONS = {F.relu: "relu", torch.relu: "relu", torch.relu_: "relu", F.relu_: "relu", F.relu6: "relu6"}
_RELU_METHODS = {"relu": "relu", "relu_": "relu"}

_IN_PLACE_OPERATORS = {operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
                       operator.imod, operator.ipow, operator.imatmul, operator.iand, operator.ior, operator.ixor,
                       operator.ilshift, operator.irshift, operator.setitem, operator.delitem}


def trace(model, leaf_types):
    """The GraphModule of `model` by torch.fx, modules of `leaf_types` (convgen's) kept as calls; raises what fx
    raises for a model it cannot trace (control flow on tensor values, ...)."""

    class Tracer(fx.Tracer):
        def is_leaf_module(self, module, qualified_name):
            return isinstance(module, leaf_types) or super().is_leaf_module(module, qualified_name)

    tracer = Tracer()
    graph = tracer.trace(model)
    return fx.GraphModule(tracer.root, graph, type(model).__name__)


def fuse(traced, convolutions, make_module):
    """Folds every chain of `traced` (a GraphModule, changed in place and returned) into one module call.
    convolutions: {torch.nn type: rank} of the convolutions a chain starts at; make_module(name, conv, batch_norm,
    act, add_residual) -> the module that computes the chain (batch_norm None when there is none), and also, with
    nothing else to fuse, the one that replaces a lone convolution."""
    modules = dict(traced.named_modules())
    references = _references(traced.graph)
    for node in list(traced.graph.nodes):
        if node.op != "call_module" or type(modules.get(node.target)) not in convolutions:
            continue
        if len(node.args) != 1 or node.kwargs:
            continue
        conv = modules[node.target]
        chain, batch_norm, residual, act = _chain(node, conv, convolutions[type(conv)], modules)
        if len(chain) == 1:
            continue
        module = make_module(node.target, conv, batch_norm, act, residual is not None)
        # The conv's own name where nothing else refers to it (what tune() and fallbacks report), else a new one.
        name = node.target if references[node.target] == 1 else _free_name(traced, node.target + "_fused")
        traced.add_submodule(name, module)
        last = chain[-1]
        with traced.graph.inserting_before(last):
            args = (node.args[0],) if residual is None else (node.args[0], residual)
            fused = traced.graph.call_module(name, args)
        last.replace_all_uses_with(fused)
        for absorbed in reversed(chain):
            traced.graph.erase_node(absorbed)
    # Convolutions left alone are swapped one for one, sharing their parameters.
    for node in traced.graph.nodes:
        if node.op == "call_module" and type(traced.get_submodule(node.target)) in convolutions:
            traced.add_submodule(node.target, make_module(node.target, traced.get_submodule(node.target), None, None,
                                                          False))
    traced.delete_all_unused_submodules()
    traced.graph.lint()
    traced.recompile()
    return traced


_ANY_BATCH_NORMS = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)
_CONCATENATIONS = {torch.cat, getattr(torch, "concat", torch.cat), getattr(torch, "concatenate", torch.cat)}


def fuse_pre_activations(traced, make_module):
    """Folds each BatchNorm → ReLU (or ReLU6) of `traced` (a GraphModule, changed in place and returned) that no
    convolution's chain took, with the channel concatenation before it where there is one (torch.cat(list, 1) whose
    only user is the BatchNorm: DenseNet's layers and transitions), into one module call: make_module(batch_norm,
    act) -> a module called with the concatenation's list, or with the BatchNorm's one input. The BatchNorm must be
    in eval mode with running statistics, and its output used by the activation alone."""
    modules = dict(traced.named_modules())
    references = _references(traced.graph)
    changed = False
    for node in list(traced.graph.nodes):
        if node.op != "call_module":
            continue
        batch_norm = modules.get(node.target)
        if type(batch_norm) not in _ANY_BATCH_NORMS or batch_norm.training or batch_norm.running_mean is None \
                or batch_norm.running_var is None or len(node.args) != 1 or node.kwargs \
                or not isinstance(node.args[0], fx.Node):
            continue
        user = _only_user(node)
        act = None if user is None else _activation(user, node, modules)
        if act is None or not _untouched_between(node, user):
            continue
        source = node.args[0]
        chain, inputs = [node, user], source
        parts = _concatenated(source)
        if parts is not None and _only_user(source) is node and _untouched_between(source, node):
            chain.insert(0, source)
            inputs = parts
        module = make_module(batch_norm, act)
        name = node.target if references[node.target] == 1 else _free_name(traced, node.target + "_fused")
        traced.add_submodule(name, module)
        with traced.graph.inserting_before(user):
            fused = traced.graph.call_module(name, (inputs,))
        user.replace_all_uses_with(fused)
        for absorbed in reversed(chain):
            traced.graph.erase_node(absorbed)
        changed = True
    if changed:
        traced.delete_all_unused_submodules()
        traced.graph.lint()
        traced.recompile()
    return traced


def fuse_relus_on_load(traced, convolution_types, wanted):
    """Drops each ReLU of `traced` (a GraphModule, changed in place and returned) whose every user is a call of a
    module of `convolution_types` that `wanted(name)` accepts, called at that place alone with the ReLU's output as
    its input (not as its residual too): those modules then take the ReLU's input and apply max(0, x) as they load it (their
    relu_on_load). Not where a node between the ReLU and a convolution may write into a tensor (the convolution now
    reads the ReLU's input later than the ReLU did), nor an in-place ReLU whose input has another user (that user
    reads the rectified values)."""
    modules = dict(traced.named_modules())
    references = _references(traced.graph)
    changed = False
    for node in list(traced.graph.nodes):
        if not node.args or not isinstance(node.args[0], fx.Node) or _activation(node, node.args[0], modules) != "relu":
            continue
        source = node.args[0]
        if _writes(node) and len(source.users) != 1:
            continue
        users = list(node.users)
        if not users or not all(
                user.op == "call_module" and isinstance(modules.get(user.target), convolution_types)
                and user.args[0] is node and node not in user.args[1:] and not user.kwargs
                and references[user.target] == 1 and wanted(user.target)
                and _untouched_between(node, user) for user in users):
            continue
        for user in users:
            modules[user.target].relu_on_load = True
            user.replace_input_with(node, source)
        traced.graph.erase_node(node)
        changed = True
    if changed:
        traced.delete_all_unused_submodules()
        traced.graph.lint()
        traced.recompile()
    return traced


def _concatenated(node):
    """The list of tensors (Nodes) `node` concatenates along dimension 1, or None when it is no such torch.cat."""
    if node.op != "call_function" or node.target not in _CONCATENATIONS or not node.args:
        return None
    options = dict(zip(("tensors", "dim"), node.args)) | dict(node.kwargs)
    parts = options.get("tensors")
    if set(options) != {"tensors", "dim"} or options["dim"] != 1 or not isinstance(parts, (list, tuple)) \
            or not parts or not all(isinstance(part, fx.Node) for part in parts):
        return None
    return list(parts)


def _references(graph):
    """{module path: how many nodes call it or read an attribute under it}."""
    counts = {}
    for node in graph.nodes:
        if node.op in ("call_module", "get_attr"):
            parts = node.target.split(".")
            for i in range(1, len(parts) + 1):
                prefix = ".".join(parts[:i])
                counts[prefix] = counts.get(prefix, 0) + 1
    return counts


def _free_name(traced, name):
    taken = dict(traced.named_modules())
    candidate, index = name, 1
    while candidate in taken:
        index += 1
        candidate = f"{name}{index}"
    return candidate


def _chain(conv_node, conv, rank, modules):
    """The nodes one module computes from `conv_node` on: ([conv, (batch norm), (add), (relu)], the BatchNorm module
    or None, the residual node or None, 'relu' / 'relu6' / None)."""
    chain, batch_norm, residual, act = [conv_node], None, None, None
    tail = conv_node
    user = _only_user(tail)
    if user is not None and user.op == "call_module" and _foldable(modules.get(user.target), conv, rank) \
            and user.args == (tail,) and not user.kwargs and _untouched_between(tail, user):
        batch_norm = modules[user.target]
        chain.append(user)
        tail = user
        user = _only_user(tail)
    if user is not None:
        other = _added_operand(user, tail)
        if other is not None and _untouched_between(tail, user):
            residual = other
            chain.append(user)
            tail = user
            user = _only_user(tail)
    if user is not None:
        kind = _activation(user, tail, modules)
        if kind is not None and _untouched_between(tail, user):
            act = kind
            chain.append(user)
    return chain, batch_norm, residual, act


def _only_user(node):
    return next(iter(node.users)) if len(node.users) == 1 else None


def _foldable(module, conv, rank):
    """Whether `module` is a BatchNorm folding into `conv`: its rank, eval mode, running statistics, K features."""
    return (type(module) is _BATCH_NORMS.get(rank) and not module.training and module.running_mean is not None
            and module.running_var is not None and module.num_features == conv.out_channels)


def _added_operand(node, tail):
    """The other tensor `node` adds to `tail` (a Node), or None when `node` is no such add."""
    in_place = _ADDS.get((node.op, node.target))
    if in_place is None or len(node.args) != 2:
        return None
    if node.kwargs and dict(node.kwargs) != {"alpha": 1}:  # alpha scales the other operand; out= writes elsewhere
        return None
    first, second = node.args
    if first is tail and isinstance(second, fx.Node) and second is not tail:
        return second
    if not in_place and second is tail and isinstance(first, fx.Node) and first is not tail:
        return first
    return None


def _activation(node, tail, modules):
    """'relu' or 'relu6' when `node` applies that to `tail` alone, else None."""
    if not node.args or node.args[0] is not tail:
        return None
    extra = node.args[1:]
    if node.op == "call_module":
        module = modules.get(node.target)
        if extra or node.kwargs:
            return None
        if type(module) is nn.ReLU:
            return "relu"
        if type(module) in (nn.ReLU6, nn.Hardtanh) and (module.min_val, module.max_val) == (0.0, 6.0):
            return "relu6"
        return None
    if node.op == "call_method":
        return _RELU_METHODS.get(node.target) if not extra and not node.kwargs else None
    if node.op != "call_function":
        return None
    if node.target is F.hardtanh:
        bounds = dict(zip(("min_val", "max_val", "inplace"), extra)) | dict(node.kwargs)
        return "relu6" if (bounds.get("min_val", -1.0), bounds.get("max_val", 1.0)) == (0.0, 6.0) else None
    kind = _RELU_FUNCTIONS.get(node.target)
    if kind is None:
        return None
    options = dict(zip(("inplace",), extra)) | dict(node.kwargs)
    return kind if set(options) <= {"inplace"} else None


def _untouched_between(first, last):
    """Whether no node strictly between `first` and `last` (graph order) may write into a tensor."""
    node = first.next
    while node is not last:
        if _writes(node):
            return False
        node = node.next
    return True


def _writes(node):
    """Whether a node may change a tensor in place (conservatively: in-place operators and methods, `inplace` or
    `out` arguments, modules made in place)."""
    if node.kwargs.get("inplace") or "out" in node.kwargs:
        return True
    if node.op == "call_method":
        return node.target.endswith("_") and not node.target.startswith("_")
    if node.op == "call_function":
        name = getattr(node.target, "__name__", "")
        return node.target in _IN_PLACE_OPERATORS or (name.endswith("_") and not name.startswith("_"))
    if node.op == "call_module":
        module = node.graph.owning_module.get_submodule(node.target)
        return bool(getattr(module, "inplace", False))
    return False
