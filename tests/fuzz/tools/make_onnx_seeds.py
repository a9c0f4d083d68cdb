#!/usr/bin/env python3
"""make_onnx_seeds: writes the onnx_import fuzz target's seed models (../corpus/onnx_import/*.onnx) with the
protobuf wire format spelled out, so that neither protoc nor the onnx Python package is needed. The models: one
typed Conv; Relu -> Conv (bias) -> Add -> Relu, once servable and once with padding it refuses; a 3-D Conv with
SAME_UPPER padding and groups whose output shape is left to shape inference (the filter is an initializer)."""
import pathlib
import struct

FLOAT = 1


def varint(value):
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def field(number, wire, payload):
    return varint(number << 3 | wire) + payload


def f_int(number, value):
    return field(number, 0, varint(value))


def f_bytes(number, data):
    data = data.encode() if isinstance(data, str) else data
    return field(number, 2, varint(len(data)) + data)


def tensor_type(dims, elem=FLOAT):
    shape = b"".join(f_bytes(1, f_int(1, d) if isinstance(d, int) else f_bytes(2, d)) for d in dims)
    return f_bytes(1, f_int(1, elem) + f_bytes(2, shape))


def value_info(name, dims=None):
    return f_bytes(1, name) + (f_bytes(2, tensor_type(dims)) if dims is not None else b"")


def attr_ints(name, values):
    return f_bytes(1, name) + f_int(20, 7) + b"".join(f_int(8, v) for v in values)


def attr_int(name, value):
    return f_bytes(1, name) + f_int(20, 2) + f_int(3, value)


def attr_string(name, value):
    return f_bytes(1, name) + f_int(20, 3) + f_bytes(4, value)


def node(op, inputs, outputs, name, attributes=()):
    return (b"".join(f_bytes(1, i) for i in inputs) + b"".join(f_bytes(2, o) for o in outputs) + f_bytes(3, name) +
            f_bytes(4, op) + b"".join(f_bytes(5, a) for a in attributes))


def initializer(name, dims):
    count = 1
    for d in dims:
        count *= d
    return b"".join(f_int(1, d) for d in dims) + f_int(2, FLOAT) + f_bytes(8, name) + \
        f_bytes(9, struct.pack(f"<{count}f", *([0.5] * count)))


def model(nodes, inputs, outputs, initializers=(), value_infos=()):
    graph = (b"".join(f_bytes(1, n) for n in nodes) + f_bytes(2, "g") +
             b"".join(f_bytes(5, t) for t in initializers) + b"".join(f_bytes(11, v) for v in inputs) +
             b"".join(f_bytes(12, v) for v in outputs) + b"".join(f_bytes(13, v) for v in value_infos))
    return f_int(1, 8) + f_bytes(8, f_bytes(1, "") + f_int(2, 13)) + f_bytes(7, graph)


def main():
    here = pathlib.Path(__file__).resolve().parent.parent / "corpus" / "onnx_import"
    conv = node("Conv", ["x", "w"], ["y"], "conv", [attr_ints("kernel_shape", [3, 3]), attr_ints("pads", [1, 1, 1, 1]),
                                                    attr_ints("strides", [1, 1])])
    (here / "conv.onnx").write_bytes(model([conv], [value_info("x", [1, 3, 8, 8]), value_info("w", [4, 3, 3, 3])],
                                           [value_info("y", [1, 4, 8, 8])]))
    for file_name, pads in (("conv_bias_add_relu.onnx", [1, 1, 1, 1]), ("conv_asymmetric_pads.onnx", [0, 0, 1, 1])):
        chain = [node("Relu", ["x"], ["r"], "relu_in"),
                 node("Conv", ["r", "w", "b"], ["c"], "conv_bias", [attr_ints("strides", [2, 2]),
                                                                   attr_ints("pads", pads)]),
                 node("Add", ["c", "s"], ["a"], "add"), node("Relu", ["a"], ["y"], "relu_out")]
        (here / file_name).write_bytes(
            model(chain, [value_info("x", ["batch", 8, 9, 9]), value_info("s", ["batch", 8, 5, 5])],
                  [value_info("y")], [initializer("w", [8, 8, 2, 2]), initializer("b", [8])]))
    conv3d = node("Conv", ["x", "w"], ["y"], "", [attr_string("auto_pad", "SAME_UPPER"), attr_int("group", 2),
                                                 attr_ints("dilations", [1, 2, 1])])
    (here / "conv3d_same_upper_groups.onnx").write_bytes(
        model([conv3d], [value_info("x", [2, 4, 6, 7, 5])], [value_info("y")], [initializer("w", [6, 2, 3, 3, 3])]))


if __name__ == "__main__":
    main()
