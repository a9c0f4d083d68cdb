"""convgen.torch: convgen's kernels behind PyTorch's convolution interface, for inference.

    import convgen.torch
    model = convgen.torch.convert(torchvision.models.resnet50().cuda().eval())   # Conv+BN+add+ReLU fused
    convgen.torch.tune(model, torch.randn(8, 3, 224, 224, device="cuda"))      # into the CLI's tuning database
    with torch.inference_mode():
        y = model(x)

`Conv2d`/`Conv3d` are drop-in for `torch.nn.Conv2d`/`Conv3d` (same arguments; `from_module` takes an existing
module's weights and bias). They run convgen when the call is one it serves: a CUDA tensor of float32, float16 or
bfloat16, no gradient wanted (inference, `torch.no_grad()` or tensors that need none), zero padding (`padding_mode`
'zeros', and 'same' only where it is symmetric). Anything else runs PyTorch's own convolution, and `fallbacks`
counts those calls, so a model is never wrong for being converted. float32 follows
`torch.backends.cudnn.allow_tf32` as `torch.nn.Conv2d` does (tf32 kernels when allowed, strict fp32 otherwise).
Channels-last inputs (`memory_format=torch.channels_last`) run NHWC kernels, others NCHW. The bias is added by the
kernel's epilogue, in its store (no second pass over the output).

Fusion: `convert` of a model in eval mode traces it with torch.fx and gives each convolution what follows it where
the value in between has no other user: a BatchNorm (folded into the weight and bias), an add of another tensor (the
residual), a ReLU or ReLU6. The fused module (a Conv2d with `act` and `add_residual`; its forward takes the residual
as a second input) runs them in the kernel's epilogue: output = act(conv + bias + residual); where convgen does not
serve a call, PyTorch computes the same sequence. At batch 1 a model is bound by PyTorch's host time per call: eager
ResNet-50 makes 171 such calls for its 53 convolutions, 53 BatchNorms, 49 ReLUs and 16 adds, the fused model 53.
Then each pre-activation left (a channel concatenation, a BatchNorm, a ReLU: DenseNet's; or a BatchNorm and a ReLU)
becomes one `AffineConcat`, a single convgen pass where PyTorch made three launches.
Models in training mode, or that fx cannot trace, are converted module by module, without fusion (see `convert`).

A call costs little on the host: a module keeps a plan per input signature (shape, strides, dtype, device of input
and weight, whether there is a bias, the TF32 setting, the residual's shape, strides, dtype and device), made on the
first call of that signature with every check that protects the call (device, dtype, layout, channels, the bias's
and residual's fit to the epilogue) and the op chosen then; a later call of the signature reads the signature,
checks the gradient, allocates the output and makes one C++ call with the pointers and PyTorch's current stream.
Nothing is copied unless the input, weight or residual is in neither dense layout. CUDA graphs: after one call per
signature (warm-up), a module's forward is capturable by `torch.cuda.graph` (no allocation but the output's, from
PyTorch's allocator; no synchronization, no compilation); a signature first seen during a capture is refused with
what to do.

Sparse families: `act_sparsity=0.5` declares the zero fraction a module's input is expected to have (one that follows
a ReLU), which the context's tuner measures with; `weight_sparse=True` bakes the module's filter pattern into the
kernel (for pruned weights; the filter is then read once per change of `weight`). `relu_on_load=True` takes the input
before its ReLU: the kernel applies max(0, x) as it loads it (act_sparse's relu1 kernels; every other kernel runs
behind a ReLU pass into its workspace, which the tuner weighs against them), so the model needs no ReLU of its own
there.
"""
import warnings
import weakref

import torch
import torch.nn.functional as F
from torch import nn

from . import ConvContext, Error, InputError, Problem

_contexts = {}
_context_options = {}
# While tune() collects a model's problems: the (device, Problem) of every new plan, whose call PyTorch runs.
_collecting = None
_COLLECTING = "collecting the problems to build ahead (convgen.torch.prepare, tune)"


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


def problem_for(input, weight, stride, padding, dilation, groups, act_sparsity=0.0, weights_baked=False,
                epilogue="none", relu_on_load=False):
    """The convgen Problem of a PyTorch convolution call (input and weight as given to F.convNd), with the epilogue
    text fused into it ('bias', 'bias+add+relu'; see convgen.Problem) and max(0, x) applied on load when
    relu_on_load."""
    rank = input.dim() - 2
    layout = _LAYOUTS[rank][1 if _channels_last(input, rank) else 0]
    problem = Problem(input.shape[0], input.shape[1], weight.shape[0], input=tuple(input.shape[2:]),
                      filter=tuple(weight.shape[2:]), stride=stride, padding=padding, dilation=dilation,
                      groups=groups, layout=layout, precision=_precision(input.dtype), act_sparsity=act_sparsity,
                      epilogue=epilogue, relu_on_load=relu_on_load)
    if weights_baked:
        filter = weight.detach().float()
        if layout in ("nwc", "nhwc", "ndhwc"):
            filter = filter.permute(0, *range(2, filter.dim()), 1)  # K (T) R S C/g
        problem = problem.with_weights(filter.contiguous().cpu().numpy())
    return problem


class _Plan:
    """What calls of one input signature need, worked out and checked once: why convgen does not serve them (''
    when it does), else the op, whether input, weight or residual must be copied into the problem's layout (only a
    tensor in neither dense layout is), the output's shape and memory format. The signature (`_signature`, and the
    residual's where there is one) holds everything these depend on, so a call whose signature is cached needs no
    other check than the gradient."""

    __slots__ = ("why", "op", "problem", "run", "prepare", "copy_input", "copy_weight", "copy_residual",
                 "output_shape", "output_strides", "dtype", "device", "memory_format", "device_index", "prepared",
                 "frozen")

    def __init__(self, why="", op=None, problem=None, input=None, weight=None, residual=None, frozen=False):
        self.why = why
        self.op = op
        self.problem = problem
        self.frozen = frozen  # the owner's frozen_weights: a capture does not prepare a prepared filter again
        if op is None:
            return
        rank = input.dim() - 2
        channels_last = problem.layout in ("nwc", "nhwc", "ndhwc")
        self.memory_format = _CHANNELS_LAST[rank] if channels_last else torch.contiguous_format
        self.copy_input = not input.is_contiguous(memory_format=self.memory_format)
        self.copy_weight = not weight.is_contiguous(memory_format=self.memory_format)
        self.copy_residual = residual is not None and not residual.is_contiguous(memory_format=self.memory_format)
        self.output_shape = (problem.n, problem.k, *problem.output)
        # empty_strided is the cheaper call (no memory format to resolve): the strides are those it would give.
        self.output_strides = torch.empty(self.output_shape, device="meta", memory_format=self.memory_format).stride()
        self.dtype, self.device = input.dtype, input.device
        self.device_index = input.device.index if input.device.index is not None else torch.cuda.current_device()
        self.run = op.run_pointers
        # Kernels with one-time work on the filter (a transformed or packed copy kept with the op): see _launch.
        self.prepare = op.prepare_pointer if op.needs_prepare else None
        self.prepared = {}  # filter pointer -> (the tensor, weakly, and its _version) when last prepared


def _signature(input, weight, bias):
    """What a plan depends on, read from the tensors in a few attribute reads (the layout is in the strides). Of the
    bias only whether there is one (the epilogue's text): a module's bias is checked when its plan is made, and
    changes its dtype or device only with the weight's."""
    return (input.shape, input.stride(), input.dtype, input.device, weight.shape, weight.stride(), weight.dtype,
            weight.device, bias is None, _allow_tf32())


def _tensor_signature(tensor):
    """What a plan depends on of a residual (or the functional form's bias): its shape, strides, dtype and device;
    the type of anything else (a traced graph can hand a fused module a number)."""
    try:
        return (tensor.shape, tensor.stride(), tensor.dtype, tensor.device)
    except (AttributeError, TypeError):
        return type(tensor)


def _epilogue(bias, residual, act):
    """The epilogue text of a call: the bias, the residual add and the activation it fuses ('none' when nothing)."""
    terms = (["bias"] if bias is not None else []) + (["add"] if residual is not None else []) + ([act] if act else [])
    return "+".join(terms) or "none"


def _unservable_epilogue(input, weight, bias, residual, output_shape):
    """Why convgen's epilogue cannot take this bias or residual ('' when it can): PyTorch then adds them as the
    model did (broadcasting, type promotion, or its own error)."""
    if bias is not None and (bias.dtype != input.dtype or bias.device != input.device
                             or tuple(bias.shape) != (weight.shape[0],)
                             or (bias.numel() > 1 and bias.stride() != (1,))):
        return (f"bias of shape {tuple(bias.shape)}, strides {tuple(bias.stride())}, {bias.dtype} on {bias.device}: "
                f"the epilogue takes {weight.shape[0]} contiguous values of the input's dtype and device")
    if residual is None:
        return ""
    if not isinstance(residual, torch.Tensor):
        return f"a residual of type {type(residual).__name__}"
    if tuple(residual.shape) != output_shape or residual.dtype != input.dtype or residual.device != input.device:
        return (f"a residual of shape {tuple(residual.shape)}, {residual.dtype} on {residual.device}: the epilogue "
                f"adds one of the output's shape {output_shape}, dtype and device")
    return ""


def _new_plan(owner, rank, input, weight, stride, padding, dilation, groups, act_sparsity, weights_baked, bias=None,
              residual=None, act=None, relu_on_load=False):
    """The _Plan of a signature not seen before: the checks, the problem with its epilogue (the bias, the residual
    add, the activation) and max(0, x) on load, the op (chosen and compiled now)."""
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
    epilogue = _epilogue(bias, residual, act)
    problem = problem_for(input, weight, stride, padding, dilation, groups, act_sparsity, weights_baked, epilogue,
                          relu_on_load)
    why = _unservable_epilogue(input, weight, bias, residual, (problem.n, problem.k, *problem.output))
    if why:
        return _Plan(why)
    if _collecting is not None:
        # tune()'s first pass: note the problem, let PyTorch run this call (the plan is dropped afterwards).
        _collecting.append((input.device, problem))
        return _Plan(_COLLECTING)
    try:
        op = context(input.device).conv(problem)
    except (Error, InputError) as error:
        if epilogue == "none":
            raise
        # Every family applies the epilogue, but a policy may still find no kernel for this problem (database_only
        # without its record, a tuning whose candidates all failed): PyTorch runs the call, as for what convgen does
        # not serve.
        return _Plan(f"no convgen kernel for epilogue '{epilogue}': {error}")
    return _Plan("", op, problem, input, weight, residual, frozen=getattr(owner, "frozen_weights", False))


def _owner_name(owner):
    return f"this {type(owner).__name__}" if isinstance(owner, _ConvgenConv) else f"convgen.torch.conv{owner}d"


def _launch(plan, input, weight, bias, residual=None):
    """Runs a plan's op: the common path, with no check left but the caller's gradient one, no copy, one C++ call.
    The bias and the residual go to the op's epilogue (the plan's problem reads exactly those given)."""
    if plan.copy_input:
        input = input.contiguous(memory_format=plan.memory_format)
    elif input.data_ptr() % 16:
        # A view at an offset (x[1:] of a batch): kernels read in 16-byte copies, which the op refuses at such an
        # address; PyTorch would have run it, so it runs on a copy.
        input = input.clone(memory_format=plan.memory_format)
    if plan.copy_weight:
        weight = weight.contiguous(memory_format=plan.memory_format)
    elif weight.data_ptr() % 16:
        weight = weight.clone(memory_format=plan.memory_format)
    output = torch.empty_strided(plan.output_shape, plan.output_strides, dtype=plan.dtype, device=plan.device)
    stream = _raw_stream(plan.device_index)
    if plan.prepare is not None:
        # The op keeps a prepared copy per filter pointer, so modules sharing it (same problem, other weights) each
        # prepare once. It is prepared again when the pointer now holds another tensor (one freed, another allocated
        # there) or the same one changed in place (its version moved), and inside a CUDA graph capture, so that every
        # replay prepares the filter's values of its own time, unless the owner's weights are frozen (frozen_weights:
        # then a replay reads the copy prepared before the capture).
        pointer, version = weight.data_ptr(), weight._version
        seen = plan.prepared.get(pointer)
        if (seen is None or seen[0]() is not weight or seen[1] != version
                or (not plan.frozen and torch.cuda.is_current_stream_capturing())):
            plan.prepare(pointer, stream)
            plan.prepared[pointer] = (weakref.ref(weight), version)
    if residual is None:
        residual_pointer = 0
    else:
        if plan.copy_residual:
            residual = residual.contiguous(memory_format=plan.memory_format)
        residual_pointer = residual.data_ptr()
    plan.run(input.data_ptr(), weight.data_ptr(), output.data_ptr(), stream, 0 if bias is None else bias.data_ptr(),
             residual_pointer)
    return output


# Plans of the functional conv2d/conv3d, by signature and convolution arguments; dropped whole when this many.
_FUNCTIONAL_PLANS_MAX = 4096
_functional_plans = {}


def _conv(rank, input, weight, bias, stride, padding, dilation, groups, act_sparsity=0.0, relu_on_load=False):
    stride, dilation = _tuple(stride, rank), _tuple(dilation, rank)
    padding_key = padding if isinstance(padding, str) else _tuple(padding, rank)
    key = (_signature(input, weight, bias), None if bias is None else _tensor_signature(bias), rank, stride,
           padding_key, dilation, groups, act_sparsity, relu_on_load)
    plan = _functional_plans.get(key)
    if plan is None:
        pad = _padding(padding, rank, tuple(weight.shape[2:]), stride, dilation)
        plan = _new_plan(rank, rank, input, weight, stride, pad, dilation, groups, act_sparsity, False, bias,
                         relu_on_load=relu_on_load)
        if len(_functional_plans) >= _FUNCTIONAL_PLANS_MAX:
            _functional_plans.clear()
        _functional_plans[key] = plan
    if plan.why or (_grad_enabled() and (input.requires_grad or weight.requires_grad
                                         or (bias is not None and bias.requires_grad))):
        return getattr(F, f"conv{rank}d")(torch.relu(input) if relu_on_load else input, weight, bias, stride, padding,
                                          dilation, groups)
    return _launch(plan, input, weight, bias)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, *, act_sparsity=0.0,
           relu_on_load=False):
    """torch.nn.functional.conv2d's arguments; convgen's kernel where it serves the call, PyTorch's otherwise. The
    bias is added in the kernel's epilogue; with relu_on_load the convolution is of max(0, input)."""
    return _conv(2, input, weight, bias, stride, padding, dilation, groups, act_sparsity, relu_on_load)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, *, act_sparsity=0.0,
           relu_on_load=False):
    """torch.nn.functional.conv3d's arguments; convgen's kernel where it serves the call, PyTorch's otherwise. The
    bias is added in the kernel's epilogue; with relu_on_load the convolution is of max(0, input)."""
    return _conv(3, input, weight, bias, stride, padding, dilation, groups, act_sparsity, relu_on_load)


# The activations a module fuses into its epilogue, and PyTorch's own for its fallback.
_ACTIVATIONS = {None: None, "relu": torch.relu, "relu6": F.relu6}


def _batch_norm_affine(batch_norm):
    """BatchNorm's running statistics (eval mode) as a per-channel affine map in float64: (g, beta - mean * g),
    g = gamma / sqrt(var + eps)."""
    scale = (batch_norm.running_var.double() + batch_norm.eps).rsqrt()
    if batch_norm.weight is not None:
        scale = scale * batch_norm.weight.double()
    shift = -batch_norm.running_mean.double() * scale
    if batch_norm.bias is not None:
        shift = shift + batch_norm.bias.double()
    return scale, shift


def fold_batch_norm(weight, bias, batch_norm):
    """The weight and bias of one convolution computing batch_norm(conv(x, weight, bias)) with BatchNorm's running
    statistics (eval mode): weight * g and (bias - mean) * g + beta, g = gamma / sqrt(var + eps). Computed in float64
    and rounded once to the weight's dtype; new tensors in the weight's layout (the arguments are not changed)."""
    with torch.inference_mode(False), torch.no_grad():
        scale, shift = _batch_norm_affine(batch_norm)
        if bias is not None:
            shift = shift + bias.double() * scale
        folded_weight = torch.empty_like(weight)  # the weight's dtype, device and strides (channels_last stays so)
        folded_weight.copy_(weight.double() * scale.view(-1, *([1] * (weight.dim() - 1))))
        return folded_weight, shift.to(weight.dtype)


def _fold_affine(batch_norm):
    """_batch_norm_affine rounded once to float32 (new tensors on the BatchNorm's device): AffineConcat's scale and
    shift."""
    with torch.inference_mode(False), torch.no_grad():
        scale, shift = _batch_norm_affine(batch_norm)
        return scale.float(), shift.float()


class _AffinePlan:
    """What AffineConcat's calls of one input signature share: why convgen does not serve them ('' when it does), or
    the output's shape, dtype, layout and device, the channel counts, batch, pixels and precision."""
    __slots__ = ("why", "shape", "dtype", "device", "memory_format", "device_index", "channels", "batch", "pixels",
                 "precision", "channels_last", "run")

    def __init__(self, why=""):
        self.why = why


class AffineConcat(nn.Module):
    """act(batch_norm(torch.cat(inputs, 1))) in one convgen pass: the pre-activation of DenseNet's layers (a channel
    concatenation, a BatchNorm in eval mode, a ReLU), or of a pre-activation ResNet (one input), where PyTorch makes
    three launches and three passes over the tensor. `convert` puts one in place of each such sequence it finds.

    The BatchNorm's running statistics are folded into a per-channel scale and shift (float32) when the module is made
    (as `convert` folds a BatchNorm into a convolution), and the module always computes with them: eval semantics,
    whatever `train()` says. Called with a list (or tuple) of tensors, or one tensor: contiguous CUDA tensors of one
    dtype (float32, float16, bfloat16), device, batch and extent, all channels-first or all channels-last; the output
    is in their layout. Any other call runs PyTorch (torch.cat, F.batch_norm with the running statistics, the
    activation) and counts in `fallbacks`. act: 'relu', 'relu6' or None."""

    def __init__(self, batch_norm, act="relu"):
        super().__init__()
        if act not in _ACTIVATIONS:
            raise ValueError(f"act: {act!r}, expected None, 'relu' or 'relu6'")
        if batch_norm.running_mean is None or batch_norm.running_var is None:
            raise ValueError("AffineConcat: the BatchNorm keeps no running statistics (track_running_stats=False)")
        self.batch_norm = batch_norm
        scale, shift = _fold_affine(batch_norm)
        self.register_buffer("scale", scale, persistent=False)
        self.register_buffer("shift", shift, persistent=False)
        self.act = act
        self.fallbacks = 0
        self.last_fallback = ""
        self._plans = {}

    def _apply(self, fn, *args, **kwargs):
        # .half(), .to(dtype) or .cuda() reach the BatchNorm and the buffers: the kernel reads float32, so the scale
        # and shift are folded again from the BatchNorm as it now is, on its new device.
        super()._apply(fn, *args, **kwargs)
        scale, shift = _fold_affine(self.batch_norm)
        self.scale, self.shift = scale.to(self.scale.device), shift.to(self.shift.device)
        return self

    def forward(self, inputs):
        tensors = inputs if isinstance(inputs, (list, tuple)) else (inputs,)
        key = tuple((t.shape, t.stride(), t.dtype, t.device) for t in tensors)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = self._plan_for(tensors)
        why = plan.why
        if not why and _grad_enabled() and any(t.requires_grad for t in tensors):
            why = _GRAD_WANTED
        if why:
            self.fallbacks += 1
            self.last_fallback = why
            return self._pytorch_forward(tensors)
        scale, shift = self.scale, self.shift
        if scale.device != plan.device:
            self.fallbacks += 1
            self.last_fallback = f"scale and shift on {scale.device}, the inputs on {plan.device}"
            return self._pytorch_forward(tensors)
        output = torch.empty(plan.shape, dtype=plan.dtype, device=plan.device, memory_format=plan.memory_format)
        plan.run([t.data_ptr() for t in tensors], plan.channels, output.data_ptr(), scale.data_ptr(),
                 shift.data_ptr(), plan.batch, plan.pixels, plan.precision, plan.channels_last, self.act or "none",
                 0.0, 0.0, _raw_stream(plan.device_index))
        return output

    def _pytorch_forward(self, tensors):
        x = torch.cat(list(tensors), 1) if len(tensors) > 1 else tensors[0]
        bn = self.batch_norm
        y = F.batch_norm(x, bn.running_mean, bn.running_var, bn.weight, bn.bias, False, 0.0, bn.eps)
        return y if self.act is None else _ACTIVATIONS[self.act](y)

    def _plan_for(self, tensors):
        first = tensors[0]
        rank = first.dim() - 2
        for t in tensors:
            if not t.is_cuda:
                return _AffinePlan(f"an input on {t.device}")
            if t.device != first.device or t.dtype != first.dtype:
                return _AffinePlan("inputs of different devices or dtypes")
            if t.dim() != first.dim() or t.shape[0] != first.shape[0] or t.shape[2:] != first.shape[2:]:
                return _AffinePlan("inputs of different batch or extent")
        precision = _PRECISIONS.get(first.dtype, "fp32" if first.dtype == torch.float32 else None)
        if precision is None:
            return _AffinePlan(f"dtype {first.dtype}")
        if rank < 1 or first.dim() > 5:
            return _AffinePlan(f"{first.dim()}-D inputs (expected N, C and 1 to 3 extents)")
        channels = [int(t.shape[1]) for t in tensors]
        if sum(channels) != self.scale.numel():
            return _AffinePlan(f"{sum(channels)} channels in, the BatchNorm has {self.scale.numel()}")
        # Each input's layout: channels-first, channels-last, or either (one channel, or one pixel).
        memory_format = _CHANNELS_LAST.get(rank)
        layouts = set()
        for t in tensors:
            first_ok = t.is_contiguous()
            last_ok = memory_format is not None and t.is_contiguous(memory_format=memory_format)
            if not first_ok and not last_ok:
                return _AffinePlan("an input in neither dense layout")
            if first_ok != last_ok:
                layouts.add(last_ok)
        if len(layouts) > 1:
            return _AffinePlan("inputs in different layouts")
        if torch.cuda.is_current_stream_capturing():
            # The pass's programs load on its first call of a dtype, which a CUDA graph capture cannot record.
            raise RuntimeError(f"convgen.torch: inputs of shapes {[tuple(t.shape) for t in tensors]} ({first.dtype}) "
                               f"are new to an AffineConcat during CUDA graph capture: call it once on such inputs "
                               f"before capturing")
        plan = _AffinePlan()
        plan.channels_last = layouts == {True}
        plan.memory_format = memory_format if plan.channels_last else torch.contiguous_format
        plan.shape = (first.shape[0], sum(channels), *first.shape[2:])
        plan.dtype, plan.device = first.dtype, first.device
        plan.device_index = first.device.index if first.device.index is not None else torch.cuda.current_device()
        plan.channels, plan.batch, plan.precision = channels, int(first.shape[0]), precision
        plan.pixels = 1
        for extent in first.shape[2:]:
            plan.pixels *= int(extent)
        plan.run = context(plan.device_index).affine_concat_pointers
        return plan

    def extra_repr(self):
        return f"{self.scale.numel()}, act={self.act!r}"


class _ConvgenConv:
    """What Conv2d and Conv3d share: the op per input signature, the fallback count, the sparse declarations, the
    epilogue (bias, residual add, activation) fused into the kernel."""

    _rank = 2

    def _convgen_init(self, act_sparsity, weight_sparse, act, add_residual, frozen_weights=False, relu_on_load=False):
        if not 0.0 <= act_sparsity <= 1.0:
            raise ValueError(f"act_sparsity: {act_sparsity}, expected a zero fraction in [0, 1]")
        if act not in _ACTIVATIONS:
            raise ValueError(f"act: {act!r}, expected None, 'relu' or 'relu6'")
        self.act_sparsity = float(act_sparsity)
        self.weight_sparse = bool(weight_sparse)
        self.act = act
        self.add_residual = bool(add_residual)
        self.relu_on_load = bool(relu_on_load)  # the input comes before its ReLU: max(0, x) applied on load
        # The weights change no more (inference): a CUDA graph captured after the first call replays the filter
        # copies prepared then (winograd's transformed filter, a packed one), instead of preparing them again in
        # every replay. An in-place change made outside a capture is still seen at the next call; one made between
        # replays is not.
        self.frozen_weights = bool(frozen_weights)
        self.fallbacks = 0
        self.last_fallback = ""
        self._plans = {}  # by _signature (and the residual's, and the filter version when its pattern is baked)

    @classmethod
    def from_module(cls, module, *, act_sparsity=0.0, weight_sparse=False, batch_norm=None, act=None,
                    add_residual=False, frozen_weights=False, relu_on_load=False):
        """A convgen module sharing `module`'s weight and bias (a torch.nn.Conv2d or Conv3d), or, given the
        `batch_norm` that follows it (eval mode), owning the two folded into one weight and bias (fold_batch_norm);
        `act`, `add_residual` and `relu_on_load` as the constructor's."""
        new = cls(module.in_channels, module.out_channels, module.kernel_size, module.stride, module.padding,
                  module.dilation, module.groups, module.bias is not None or batch_norm is not None,
                  module.padding_mode, device="meta", dtype=module.weight.dtype, act_sparsity=act_sparsity,
                  weight_sparse=weight_sparse, act=act, add_residual=add_residual, frozen_weights=frozen_weights,
                  relu_on_load=relu_on_load)
        if batch_norm is None:
            new.weight = module.weight
            new.bias = module.bias
        else:
            # Derived values, not trainable ones: without a gradient to want, they leave every call to convgen.
            weight, bias = fold_batch_norm(module.weight, module.bias, batch_norm)
            new.weight = nn.Parameter(weight, requires_grad=False)
            new.bias = nn.Parameter(bias, requires_grad=False)
        new.train(module.training)
        return new

    def forward(self, input, residual=None):
        # The parameters straight from their dict: `self.weight` goes through nn.Module.__getattr__, slower by far
        # than the rest of a cached call (a parametrized module has them elsewhere: then the attribute).
        parameters = self._parameters
        weight = parameters.get("weight", _ABSENT)
        if weight is _ABSENT:
            weight = self.weight
        bias = parameters.get("bias", _ABSENT)
        if bias is _ABSENT:
            bias = self.bias
        key = _signature(input, weight, bias)
        if residual is not None:
            try:  # _tensor_signature inlined: a call costs as much as the reads
                key = (key, residual.shape, residual.stride(), residual.dtype, residual.device)
            except AttributeError:  # a number (the traced graph can add one): its plan runs PyTorch
                key = (key, type(residual))
        if self.weight_sparse:
            key = (key, weight._version)  # the baked pattern is read again once the filter changed
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = self._plan_for(input, weight, bias, residual)
        why = plan.why
        if not why and _grad_enabled() and (input.requires_grad or weight.requires_grad
                                            or (bias is not None and bias.requires_grad)
                                            or (residual is not None and residual.requires_grad)):
            why = _GRAD_WANTED
        if why:
            self.fallbacks += 1
            self.last_fallback = why
            return self._pytorch_forward(input, weight, bias, residual)
        return _launch(plan, input, weight, bias, residual)

    def _pytorch_forward(self, input, weight, bias, residual):
        """The module's result by PyTorch, as the layers it stands for computed it (for a call convgen does not
        serve): the ReLU of the input where it is taken before it, the convolution, then the residual added, then the
        activation."""
        output = self._conv_forward(torch.relu(input) if self.relu_on_load else input, weight, bias)
        if residual is not None:
            output = output + residual
        return output if self.act is None else _ACTIVATIONS[self.act](output)

    def _plan_for(self, input, weight, bias, residual):
        if (residual is not None) != self.add_residual:
            raise TypeError(f"{type(self).__name__}.forward: " + (
                "a residual given to a module made without add_residual" if residual is not None else
                "the module adds a residual (add_residual=True): call it as module(input, residual)"))
        if self.padding_mode != "zeros":
            return _Plan("padding_mode " + self.padding_mode)
        pad = _padding(self.padding, self._rank, self.kernel_size, self.stride, self.dilation)
        return _new_plan(self, self._rank, input, weight, self.stride, pad, self.dilation, self.groups,
                         self.act_sparsity, self.weight_sparse, bias, residual, self.act, self.relu_on_load)

    def ops(self):
        """The (problem key, kernel name, how it was chosen) of each op this module built."""
        return [(plan.problem.key(), plan.op.kernel_name, plan.op.chosen_by) for plan in self._plans.values()
                if plan.op is not None]

    def extra_repr(self):
        extra = super().extra_repr()
        if self.add_residual:
            extra += ", add_residual=True"
        if self.act:
            extra += f", act={self.act!r}"
        if self.act_sparsity:
            extra += f", act_sparsity={self.act_sparsity}"
        if self.weight_sparse:
            extra += ", weight_sparse=True"
        if self.relu_on_load:
            extra += ", relu_on_load=True"
        return extra


class Conv2d(_ConvgenConv, nn.Conv2d):
    """torch.nn.Conv2d on convgen's kernels (where it serves the call; see the module's doc). `act` ('relu',
    'relu6') and `add_residual` (forward(input, residual)) fuse what follows the convolution into its epilogue:
    act(conv(input) + bias + residual); `relu_on_load` the ReLU before it: conv(max(0, input)). `frozen_weights`: the weights change no more (inference), so a CUDA graph
    captured after a first call replays the filter copy prepared then instead of preparing it in every replay."""

    _rank = 2

    def __init__(self, *args, act_sparsity=0.0, weight_sparse=False, act=None, add_residual=False,
                 frozen_weights=False, relu_on_load=False, **kwargs):
        nn.Conv2d.__init__(self, *args, **kwargs)
        self._convgen_init(act_sparsity, weight_sparse, act, add_residual, frozen_weights, relu_on_load)


class Conv3d(_ConvgenConv, nn.Conv3d):
    """torch.nn.Conv3d on convgen's kernels (where it serves the call; see the module's doc); `act` and
    `add_residual` as Conv2d's."""

    _rank = 3

    def __init__(self, *args, act_sparsity=0.0, weight_sparse=False, act=None, add_residual=False,
                 frozen_weights=False, relu_on_load=False, **kwargs):
        nn.Conv3d.__init__(self, *args, **kwargs)
        self._convgen_init(act_sparsity, weight_sparse, act, add_residual, frozen_weights, relu_on_load)


_CONVGEN_TYPES = {nn.Conv2d: Conv2d, nn.Conv3d: Conv3d}
_RANKS = {nn.Conv2d: 2, nn.Conv3d: 3}


def convert(model, *, act_sparsity=None, weight_sparse=False, fuse=None, frozen_weights=False, relu_on_load=False):
    """Runs every torch.nn.Conv2d and Conv3d of `model` on convgen; returns the converted model.

    Fused (a model in eval mode that torch.fx traces; `fuse=True` insists, `fuse=False` never fuses): a new module
    (a torch.fx.GraphModule) is returned and `model` is left as it was. Each convolution becomes a convgen module
    that computes it with what follows it, where the value in between has no other user: a BatchNorm in eval mode
    (folded into a weight and bias of its own, in the weight's dtype; the BatchNorm's statistics are read now), then
    an add of another tensor (the residual, a second input of the module), then a ReLU or ReLU6; its epilogue does
    them in the kernel's store ('bias+add+relu'), so the model makes one call where it made four. A convolution
    fused with nothing shares its parameters. Modules keep their qualified names (the convolution's; one called at
    several places is `<name>_fused` where fused), so `act_sparsity`, `weight_sparse`, `tune` and `fallbacks` name
    layers as before; the BatchNorm modules are gone
    from the result (load weights before converting). Then each BatchNorm → ReLU (or ReLU6) left, with the channel
    concatenation before it where there is one, becomes an `AffineConcat` (one pass; it keeps the BatchNorm as a
    child, at the BatchNorm's name). The fused model is for inference: train() brings no batch
    statistics back.

    Not fused (training mode, `fuse=False`, or a model fx cannot trace: then a warning says why): the convolutions
    are swapped in place, sharing their parameters, and `model` is returned.

    act_sparsity: a zero fraction for every convolution, or {qualified module name: fraction}; weight_sparse: True,
    or a set of qualified names, for filters whose pattern convgen bakes into the kernel; frozen_weights: the weights
    change no more (inference): CUDA graphs captured after a first call replay the filter copies prepared then
    instead of preparing them again in every replay (the modules' frozen_weights); relu_on_load (fused models only):
    True, or a set of qualified names, for convolutions that take a ReLU's output where every user of that ReLU is
    such a convolution: the ReLU is dropped and they apply max(0, x) to its input (act_sparse's relu1 kernels as
    they load it; any other kernel behind a ReLU pass of its own, which the tuner weighs against them; a module
    whose call PyTorch runs applies the ReLU in its fallback: bench/results/h200/relu-prologue-2026-12-01/). Modules
    of other types, subclasses of Conv2d/Conv3d included, are left as they are."""
    def fraction(name):
        if isinstance(act_sparsity, dict):
            return act_sparsity.get(name, 0.0)
        return act_sparsity or 0.0

    def baked(name):
        return weight_sparse is True or (not isinstance(weight_sparse, bool) and name in weight_sparse)

    def make_module(name, module, batch_norm=None, act=None, add_residual=False):
        return _CONVGEN_TYPES[type(module)].from_module(module, act_sparsity=fraction(name), weight_sparse=baked(name),
                                                        batch_norm=batch_norm, act=act, add_residual=add_residual,
                                                        frozen_weights=frozen_weights)

    if type(model) in _CONVGEN_TYPES:  # a bare Conv2d/Conv3d: its replacement is the answer, nothing to fuse
        return make_module("", model)
    if fuse and model.training:
        raise ValueError("convert: fuse=True but the model is in training mode: fusing folds BatchNorm's running "
                         "statistics, which is for inference (call model.eval() first)")
    if fuse or (fuse is None and not model.training):
        from . import _fusion  # torch.fx only where fusing

        try:
            traced = _fusion.trace(model, (_ConvgenConv,))
        except Exception as error:  # fx raises many types (TraceError, TypeError, RuntimeError, ...)
            if fuse:
                raise ValueError(f"convert: fuse=True but torch.fx cannot trace {type(model).__name__}: {error}") \
                    from error
            warnings.warn(f"convgen.torch.convert: torch.fx cannot trace {type(model).__name__} ({error}): its "
                          f"convolutions are swapped one by one, nothing is fused (convert(..., fuse=False) says so "
                          f"without this warning)", stacklevel=2)
        else:
            fused = _fusion.fuse_pre_activations(_fusion.fuse(traced, _RANKS, make_module), AffineConcat)
            if not relu_on_load:
                return fused
            return _fusion.fuse_relus_on_load(fused, _ConvgenConv, lambda name: relu_on_load is True or (
                not isinstance(relu_on_load, bool) and name in relu_on_load))
    if relu_on_load:
        warnings.warn("convgen.torch.convert: relu_on_load drops ReLUs from a fused model only (eval mode, traced by "
                      "torch.fx): this model's ReLUs stay", stacklevel=2)
    for name, module in list(model.named_modules()):
        if type(module) in _CONVGEN_TYPES:
            parent_name, _, child = name.rpartition(".")
            setattr(model.get_submodule(parent_name) if parent_name else model, child, make_module(name, module))
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


def prepare(model, example_input):
    """Builds, ahead of the model's first calls, every convolution `model` runs on `example_input`, under the policy
    `configure` set (ConvContext.prepare): the kernels the policy's choices need are compiled all at once (each
    problem's recorded best; under cost_model_only the families' defaults), and under tune_on_first_use the problems
    without a record are tuned in one pipeline. Two passes, no gradient: the first notes each convolution's problem
    (PyTorch runs them), the second builds every module's op. Returns one dict per convgen module: layer, problem,
    kernel, chosen_by, plus the layers PyTorch ran (fallbacks) with why."""
    global _collecting
    modules = [(name, m) for name, m in model.named_modules() if isinstance(m, _ConvgenConv)]
    _collecting = []
    try:
        for _, m in modules:
            m._plans.clear()
        with torch.no_grad():
            model(example_input)
    finally:
        collected, _collecting = _collecting, None
        for _, m in modules:
            m._plans.clear()
            m.fallbacks = 0
            m.last_fallback = ""
        _functional_plans.clear()
    by_device = {}
    for device, problem in collected:
        by_device.setdefault(device, []).append(problem)
    for device, problems in by_device.items():
        context(device).prepare(problems)
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


def tune(model, example_input, *, database=None, budget=None):
    """Tunes every convolution `model` runs on `example_input` into the tuning database (the CLI's unless
    `database`), measuring at most `budget` candidates per layer (the context's tune_budget, 10, unless given):
    `prepare` under the tune_on_first_use policy, whatever `configure` set (restored after). The problems are tuned
    in one pipeline (ConvContext.prepare: the next layers' candidates compile while one is measured). Returns
    prepare's summary."""
    options = dict(_context_options)
    options["policy"] = "tune_on_first_use"
    if database is not None:
        options["database"] = str(database)
    if budget is not None:
        options["tune_budget"] = int(budget)
    saved = dict(_context_options)
    configure(**options)
    try:
        return prepare(model, example_input)
    finally:
        configure(**saved)


__all__ = ["Conv2d", "Conv3d", "AffineConcat", "conv2d", "conv3d", "convert", "observe_act_sparsity", "prepare",
           "tune", "configure", "context", "problem_for", "servable", "fold_batch_norm"]
