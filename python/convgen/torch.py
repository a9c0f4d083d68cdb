"""convgen.torch: convgen's kernels behind PyTorch's convolution interface, for inference.

    import convgen.torch
    model = convgen.torch.convert(torchvision.models.resnet50().cuda().eval())   # every eligible Conv2d swapped
    convgen.torch.tune(model, torch.randn(8, 3, 224, 224, device="cuda"))      # into the CLI's tuning database
    with torch.inference_mode():
        y = model(x)

`Conv2d`/`Conv3d` are drop-in for `torch.nn.Conv2d`/`Conv3d` (same arguments; `from_module` takes an existing
module's weights and bias). They run convgen when the call is one it serves: a CUDA tensor of float32, float16 or
bfloat16, no gradient wanted (inference, `torch.no_grad()` or tensors that need none), zero padding (`padding_mode`
'zeros', and 'same' only where it is symmetric). Anything else runs PyTorch's own convolution, and `fallbacks`
counts those calls, so a model is never wrong for being converted. float32 follows
`torch.backends.cudnn.allow_tf32` as `torch.nn.Conv2d` does (tf32 kernels when allowed, strict fp32 otherwise).
Channels-last inputs (`memory_format=torch.channels_last`) run NHWC kernels, others NCHW. The bias is added after
the convolution by PyTorch (convgen fuses no epilogue yet).

A call costs little on the host: a module keeps a plan per input signature (shape, strides, dtype, device of input
and weight, the TF32 setting), made on the first call of that signature with every check that protects the call
(device, dtype, layout, channels) and the op chosen then; a later call of the signature reads the signature, checks
the gradient, allocates the output and makes one C++ call with the pointers and PyTorch's current stream. Nothing is
copied unless the input or weight is in neither dense layout. CUDA graphs: after one call per signature (warm-up), a
module's forward is capturable by `torch.cuda.graph` (no allocation but the output's, from PyTorch's allocator; no
synchronization, no compilation); a signature first seen during a capture is refused with what to do.

Sparse families: `act_sparsity=0.5` declares the zero fraction a module's input is expected to have (one that follows
a ReLU), which the context's tuner measures with; `weight_sparse=True` bakes the module's filter pattern into the
kernel (for pruned weights; the filter is then read once per change of `weight`).
"""
import weakref

import torch
import torch.nn.functional as F
from torch import nn

from . import ConvContext, Problem

_contexts = {}
_context_options = {}


def configure(**options):
    """Options of the contexts convgen.torch makes from now on, one per device: database, cache_dir, policy,
    tune_budget (ConvContext's keywords). Contexts already made are dropped."""
    allowed = {"database", "cache_dir", "policy", "tune_budget"}
    unknown = set(options) - allowed
    if unknown:
        raise TypeError(f"configure: unknown option(s) {sorted(unknown)}, expected some of {sorted(allowed)}")
    _context_options.clear()
    _context_options.update(options)
    _contexts.clear()
    _functional_plans.clear()


def context(device=None):
    """The ConvContext convgen.torch uses for a CUDA device (an index or torch.device; default: the current one)."""
    if device is None:
        index = torch.cuda.current_device()
    elif isinstance(device, int):
        index = device
    else:
        device = torch.device(device)
        index = device.index if device.index is not None else torch.cuda.current_device()
    if index not in _contexts:
        _contexts[index] = ConvContext(device=index, **_context_options)
    return _contexts[index]


_PRECISIONS = {torch.float16: "fp16", torch.bfloat16: "bf16"}
_LAYOUTS = {1: ("ncw", "nwc"), 2: ("nchw", "nhwc"), 3: ("ncdhw", "ndhwc")}
_CHANNELS_LAST = {2: torch.channels_last, 3: torch.channels_last_3d}


def _tuple(value, rank):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * rank


def _padding(padding, rank, kernel, stride, dilation):
    """Zero padding per dim, or None where convgen cannot serve it ('same' that is not symmetric)."""
    if padding == "valid":
        return (0,) * rank
    if padding == "same":
        if any(s != 1 for s in stride):
            return None
        totals = [d * (k - 1) for d, k in zip(dilation, kernel)]
        return None if any(t % 2 for t in totals) else tuple(t // 2 for t in totals)
    return _tuple(padding, rank)


def _precision(dtype):
    if dtype == torch.float32:
        return "tf32" if _allow_tf32() else "fp32"
    return _PRECISIONS.get(dtype)


# Read on every call, so kept to the cheapest spelling: torch.backends.cudnn.allow_tf32 goes through a module
# property, and torch.cuda.current_stream() makes a Stream object; the raw getters are what torch.compile's generated
# code calls (the public spellings where a build lacks them).
_allow_tf32 = getattr(torch._C, "_get_cudnn_allow_tf32", None) or (lambda: torch.backends.cudnn.allow_tf32)
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or \
    (lambda index: torch.cuda.current_stream(index).cuda_stream)
_grad_enabled = torch.is_grad_enabled
_GRAD_WANTED = "a gradient is wanted (convgen runs the forward pass only)"
_ABSENT = object()


def _channels_last(x, rank):
    memory_format = _CHANNELS_LAST.get(rank)
    return memory_format is not None and not x.is_contiguous() and x.is_contiguous(memory_format=memory_format)


def _unservable(input, weight, padding, rank):
    """Why convgen does not serve a call, from what its input signature fixes ('' when it does): everything servable
    checks but the gradient, which depends on the call."""
    if not input.is_cuda:
        return f"input on {input.device}"
    if _precision(input.dtype) is None:
        return f"dtype {input.dtype}"
    if weight.dtype != input.dtype or weight.device != input.device:
        return "weight of another dtype or device than the input"
    if padding is None:
        return "asymmetric 'same' padding"
    if input.dim() != rank + 2:
        return f"a {input.dim()}-D input"
    return ""


def servable(input, weight, padding, rank):
    """Why convgen does not serve this call ('' when it does)."""
    why = _unservable(input, weight, padding, rank)
    if not why and _grad_enabled() and (input.requires_grad or weight.requires_grad):
        return _GRAD_WANTED
    return why


def problem_for(input, weight, stride, padding, dilation, groups, act_sparsity=0.0, weights_baked=False):
    """The convgen Problem of a PyTorch convolution call (input and weight as given to F.convNd)."""
    rank = input.dim() - 2
    layout = _LAYOUTS[rank][1 if _channels_last(input, rank) else 0]
    problem = Problem(input.shape[0], input.shape[1], weight.shape[0], input=tuple(input.shape[2:]),
                      filter=tuple(weight.shape[2:]), stride=stride, padding=padding, dilation=dilation,
                      groups=groups, layout=layout, precision=_precision(input.dtype), act_sparsity=act_sparsity)
    if weights_baked:
        filter = weight.detach().float()
        if layout in ("nwc", "nhwc", "ndhwc"):
            filter = filter.permute(0, *range(2, filter.dim()), 1)  # K (T) R S C/g
        problem = problem.with_weights(filter.contiguous().cpu().numpy())
    return problem


class _Plan:
    """What calls of one input signature need, worked out and checked once: why convgen does not serve them (''
    when it does), else the op, whether input or weight must be copied into the problem's layout (only a tensor in
    neither dense layout is), the output's shape and memory format, the bias's view shape. The signature (`_signature`)
    holds everything these depend on, so a call whose signature is cached needs no other check than the gradient."""

    __slots__ = ("why", "op", "problem", "run", "prepare", "copy_input", "copy_weight", "output_shape",
                 "output_strides", "dtype", "device", "memory_format", "bias_shape", "device_index", "prepared")

    def __init__(self, why="", op=None, problem=None, input=None, weight=None):
        self.why = why
        self.op = op
        self.problem = problem
        if op is None:
            return
        rank = input.dim() - 2
        channels_last = problem.layout in ("nwc", "nhwc", "ndhwc")
        self.memory_format = _CHANNELS_LAST[rank] if channels_last else torch.contiguous_format
        self.copy_input = not input.is_contiguous(memory_format=self.memory_format)
        self.copy_weight = not weight.is_contiguous(memory_format=self.memory_format)
        self.output_shape = (problem.n, problem.k, *problem.output)
        # empty_strided is the cheaper call (no memory format to resolve): the strides are those it would give.
        self.output_strides = torch.empty(self.output_shape, device="meta", memory_format=self.memory_format).stride()
        self.dtype, self.device = input.dtype, input.device
        self.bias_shape = (1, -1, *([1] * rank))
        self.device_index = input.device.index if input.device.index is not None else torch.cuda.current_device()
        self.run = op.run_pointers
        # Kernels with one-time work on the filter (a transformed or packed copy kept with the op): see _launch.
        self.prepare = op.prepare_pointer if op.needs_prepare else None
        self.prepared = {}  # filter pointer -> (the tensor, weakly, and its _version) when last prepared


def _signature(input, weight):
    """What a plan depends on, read from the tensors in a few attribute reads (the layout is in the strides)."""
    return (input.shape, input.stride(), input.dtype, input.device, weight.shape, weight.stride(), weight.dtype,
            weight.device, _allow_tf32())


def _new_plan(owner, rank, input, weight, stride, padding, dilation, groups, act_sparsity, weights_baked):
    """The _Plan of a signature not seen before: the checks, the problem, the op (chosen and compiled now)."""
    why = _unservable(input, weight, padding, rank)
    if why:
        return _Plan(why)
    if weight.dim() != rank + 2 or input.shape[1] != weight.shape[1] * groups:
        # PyTorch's convolution says what is wrong (the kernel would read past the filter).
        return _Plan(f"input of {input.shape[1]} channels for a weight of shape {tuple(weight.shape)}, groups {groups}")
    if torch.cuda.is_current_stream_capturing():
        # Choosing the kernel may compile, tune (timing on the GPU) or copy the filter to the host: none of which a
        # CUDA graph capture allows, and what it recorded would not be replayed.
        raise RuntimeError(f"convgen.torch: input of shape {tuple(input.shape)} ({input.dtype}, strides "
                           f"{tuple(input.stride())}) is new to {_owner_name(owner)} during CUDA graph capture: its "
                           f"kernel would be chosen and compiled inside the capture; call it once on such an input "
                           f"before capturing")
    problem = problem_for(input, weight, stride, padding, dilation, groups, act_sparsity, weights_baked)
    return _Plan("", context(input.device).conv(problem), problem, input, weight)


def _owner_name(owner):
    return f"this {type(owner).__name__}" if isinstance(owner, _ConvgenConv) else f"convgen.torch.conv{owner}d"


def _launch(plan, input, weight, bias):
    """Runs a plan's op: the common path, with no check left but the caller's gradient one, no copy, one C++ call."""
    if plan.copy_input:
        input = input.contiguous(memory_format=plan.memory_format)
    if plan.copy_weight:
        weight = weight.contiguous(memory_format=plan.memory_format)
    output = torch.empty_strided(plan.output_shape, plan.output_strides, dtype=plan.dtype, device=plan.device)
    stream = _raw_stream(plan.device_index)
    if plan.prepare is not None:
        # The op keeps a prepared copy per filter pointer, so modules sharing it (same problem, other weights) each
        # prepare once. It is prepared again when the pointer now holds another tensor (one freed, another allocated
        # there) or the same one changed in place (its version moved), and inside a CUDA graph capture, so that every
        # replay prepares the filter's values of its own time.
        pointer, version = weight.data_ptr(), weight._version
        seen = plan.prepared.get(pointer)
        if (seen is None or seen[0]() is not weight or seen[1] != version
                or torch.cuda.is_current_stream_capturing()):
            plan.prepare(pointer, stream)
            plan.prepared[pointer] = (weakref.ref(weight), version)
    plan.run(input.data_ptr(), weight.data_ptr(), output.data_ptr(), stream)
    if bias is not None:  # after the kernel: no fused epilogue yet
        output += bias.view(plan.bias_shape)
    return output


# Plans of the functional conv2d/conv3d, by signature and convolution arguments; dropped whole when this many.
_FUNCTIONAL_PLANS_MAX = 4096
_functional_plans = {}


def _conv(rank, input, weight, bias, stride, padding, dilation, groups, act_sparsity=0.0):
    stride, dilation = _tuple(stride, rank), _tuple(dilation, rank)
    padding_key = padding if isinstance(padding, str) else _tuple(padding, rank)
    key = (_signature(input, weight), rank, stride, padding_key, dilation, groups, act_sparsity)
    plan = _functional_plans.get(key)
    if plan is None:
        pad = _padding(padding, rank, tuple(weight.shape[2:]), stride, dilation)
        plan = _new_plan(rank, rank, input, weight, stride, pad, dilation, groups, act_sparsity, False)
        if len(_functional_plans) >= _FUNCTIONAL_PLANS_MAX:
            _functional_plans.clear()
        _functional_plans[key] = plan
    if plan.why or (_grad_enabled() and (input.requires_grad or weight.requires_grad)):
        return getattr(F, f"conv{rank}d")(input, weight, bias, stride, padding, dilation, groups)
    return _launch(plan, input, weight, bias)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, *, act_sparsity=0.0):
    """torch.nn.functional.conv2d's arguments; convgen's kernel where it serves the call, PyTorch's otherwise."""
    return _conv(2, input, weight, bias, stride, padding, dilation, groups, act_sparsity)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, *, act_sparsity=0.0):
    """torch.nn.functional.conv3d's arguments; convgen's kernel where it serves the call, PyTorch's otherwise."""
    return _conv(3, input, weight, bias, stride, padding, dilation, groups, act_sparsity)


class _ConvgenConv:
    """What Conv2d and Conv3d share: the op per input signature, the fallback count, the sparse declarations."""

    _rank = 2

    def _convgen_init(self, act_sparsity, weight_sparse):
        if not 0.0 <= act_sparsity <= 1.0:
            raise ValueError(f"act_sparsity: {act_sparsity}, expected a zero fraction in [0, 1]")
        self.act_sparsity = float(act_sparsity)
        self.weight_sparse = bool(weight_sparse)
        self.fallbacks = 0
        self.last_fallback = ""
        self._plans = {}  # by _signature (and filter version, when its pattern is baked)

    @classmethod
    def from_module(cls, module, *, act_sparsity=0.0, weight_sparse=False):
        """A convgen module sharing `module`'s weight and bias (a torch.nn.Conv2d or Conv3d)."""
        new = cls(module.in_channels, module.out_channels, module.kernel_size, module.stride, module.padding,
                  module.dilation, module.groups, module.bias is not None, module.padding_mode, device="meta",
                  dtype=module.weight.dtype, act_sparsity=act_sparsity, weight_sparse=weight_sparse)
        new.weight = module.weight
        new.bias = module.bias
        new.train(module.training)
        return new

    def forward(self, input):
        # The parameters straight from their dict: `self.weight` goes through nn.Module.__getattr__, slower by far
        # than the rest of a cached call (a parametrized module has them elsewhere: then the attribute).
        parameters = self._parameters
        weight = parameters.get("weight", _ABSENT)
        if weight is _ABSENT:
            weight = self.weight
        key = _signature(input, weight)
        if self.weight_sparse:
            key = (key, weight._version)  # the baked pattern is read again once the filter changed
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = self._plan_for(input, weight)
        why = plan.why or (_GRAD_WANTED if _grad_enabled() and (input.requires_grad or weight.requires_grad) else "")
        if why:
            self.fallbacks += 1
            self.last_fallback = why
            return super().forward(input)
        bias = parameters.get("bias", _ABSENT)
        return _launch(plan, input, weight, self.bias if bias is _ABSENT else bias)

    def _plan_for(self, input, weight):
        if self.padding_mode != "zeros":
            return _Plan("padding_mode " + self.padding_mode)
        pad = _padding(self.padding, self._rank, self.kernel_size, self.stride, self.dilation)
        return _new_plan(self, self._rank, input, weight, self.stride, pad, self.dilation, self.groups,
                         self.act_sparsity, self.weight_sparse)

    def ops(self):
        """The (problem key, kernel name, how it was chosen) of each op this module built."""
        return [(plan.problem.key(), plan.op.kernel_name, plan.op.chosen_by) for plan in self._plans.values()
                if plan.op is not None]

    def extra_repr(self):
        extra = super().extra_repr()
        if self.act_sparsity:
            extra += f", act_sparsity={self.act_sparsity}"
        if self.weight_sparse:
            extra += ", weight_sparse=True"
        return extra


class Conv2d(_ConvgenConv, nn.Conv2d):
    """torch.nn.Conv2d on convgen's kernels (where it serves the call; see the module's doc)."""

    _rank = 2

    def __init__(self, *args, act_sparsity=0.0, weight_sparse=False, **kwargs):
        nn.Conv2d.__init__(self, *args, **kwargs)
        self._convgen_init(act_sparsity, weight_sparse)


class Conv3d(_ConvgenConv, nn.Conv3d):
    """torch.nn.Conv3d on convgen's kernels (where it serves the call; see the module's doc)."""

    _rank = 3

    def __init__(self, *args, act_sparsity=0.0, weight_sparse=False, **kwargs):
        nn.Conv3d.__init__(self, *args, **kwargs)
        self._convgen_init(act_sparsity, weight_sparse)


def convert(model, *, act_sparsity=None, weight_sparse=False):
    """Swaps every torch.nn.Conv2d and Conv3d of `model` (in place; returned) for convgen's, sharing weights.

    act_sparsity: a zero fraction for every convolution, or {qualified module name: fraction}; weight_sparse: True,
    or a set of qualified names, for filters whose pattern convgen bakes into the kernel. Modules of other types,
    subclasses of Conv2d/Conv3d included, are left as they are."""
    def fraction(name):
        if isinstance(act_sparsity, dict):
            return act_sparsity.get(name, 0.0)
        return act_sparsity or 0.0

    def baked(name):
        return weight_sparse is True or (not isinstance(weight_sparse, bool) and name in weight_sparse)

    replacements = []
    for name, module in model.named_modules():
        kind = {nn.Conv2d: Conv2d, nn.Conv3d: Conv3d}.get(type(module))
        if kind is not None:
            replacements.append((name, kind.from_module(module, act_sparsity=fraction(name),
                                                        weight_sparse=baked(name))))
    for name, replacement in replacements:
        if not name:  # the model is itself a bare Conv2d/Conv3d: its replacement is the answer
            return replacement
        parent_name, _, child = name.rpartition(".")
        setattr(model.get_submodule(parent_name) if parent_name else model, child, replacement)
    return model


def observe_act_sparsity(model, example_input, *, floor=0.05):
    """{qualified name: zero fraction of its input} for every Conv2d/Conv3d (PyTorch's or convgen's) of `model`
    on `example_input`, measured in one forward pass without gradient; fractions under `floor` are left out.
    Pass the result to convert(model, act_sparsity=...) so the tuner measures each layer on inputs that sparse."""
    fractions, hooks = {}, []
    for name, module in model.named_modules():
        if isinstance(module, (nn.Conv2d, nn.Conv3d)):
            def record(module, args, name=name):
                fractions[name] = (args[0] == 0).float().mean().item()
            hooks.append(module.register_forward_pre_hook(record))
    try:
        with torch.no_grad():
            model(example_input)
    finally:
        for hook in hooks:
            hook.remove()
    return {name: round(f, 2) for name, f in fractions.items() if f >= floor}


def tune(model, example_input, *, database=None, budget=None):
    """Tunes every convolution `model` runs on `example_input` (one forward pass, no gradient) into the tuning
    database (the CLI's unless `database`), measuring at most `budget` candidates per layer (the context's
    tune_budget, 10, unless given). Returns one dict per convgen module: layer, problem, kernel, chosen_by,
    plus the layers PyTorch ran (fallbacks) with why."""
    options = dict(_context_options)
    options["policy"] = "tune_on_first_use"
    if database is not None:
        options["database"] = str(database)
    if budget is not None:
        options["tune_budget"] = int(budget)
    saved = dict(_context_options)
    configure(**options)
    try:
        modules = [(name, m) for name, m in model.named_modules() if isinstance(m, _ConvgenConv)]
        for _, m in modules:
            m._plans.clear()
        with torch.no_grad():
            model(example_input)
        torch.cuda.synchronize()
        summary = []
        for name, m in modules:
            for key, kernel, chosen_by in m.ops():
                summary.append({"layer": name, "problem": key, "kernel": kernel, "chosen_by": chosen_by})
            if not m.ops() and m.fallbacks:
                summary.append({"layer": name, "problem": None, "kernel": None, "chosen_by": "pytorch",
                                "why": m.last_fallback})
        return summary
    finally:
        configure(**saved)


__all__ = ["Conv2d", "Conv3d", "conv2d", "conv3d", "convert", "observe_act_sparsity", "tune", "configure", "context", "problem_for",
           "servable"]
