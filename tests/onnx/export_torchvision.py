#!/usr/bin/env python3
"""Exports PyTorch networks to ONNX with libtorch's output as the expected result.

Usage: export_torchvision.py OUT_DIR

Writes, for each network NAME, the layout of ONNX's backend tests:
  OUT_DIR/NAME/model.onnx
  OUT_DIR/NAME/test_data_set_0/input_0.pb   (1x3x64x64 float32)
  OUT_DIR/NAME/test_data_set_0/output_0.pb  (libtorch's output in eval mode)

Networks: torchvision ResNet-18 and MobileNetV2 (opset 13, input 1x3x64x64 rather
than 224x224 to keep the Halide reference runs of CI short), and one PyTorch
TransformerEncoderLayer (opset 17, input 1x16x32: d_model 32, 4 heads, GELU), whose
export computes reshape targets from Shape/Gather/Slice subgraphs and uses
LayerNormalization. The weights are random (torch.manual_seed, weights=None:
nothing is downloaded) and batch-norm statistics are randomized too, so that
folding them matters.
"""
import os
import sys

import torch
import torchvision
import onnx
from onnx import numpy_helper

IMAGE_SHAPE = (1, 3, 64, 64)
SEQUENCE_SHAPE = (1, 16, 32)
SEED = 20240601


def randomize_batch_norm(model, generator):
    for module in model.modules():
        if isinstance(module, torch.nn.BatchNorm2d):
            c = module.num_features
            with torch.no_grad():
                module.weight.copy_(0.5 + torch.rand(c, generator=generator))
                module.bias.copy_(0.2 * torch.rand(c, generator=generator) - 0.1)
                module.running_mean.copy_(0.2 * torch.rand(c, generator=generator) - 0.1)
                module.running_var.copy_(0.5 + torch.rand(c, generator=generator))


def write_tensor(path, array, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(array, name).SerializeToString())


def export(name, model, input_shape, opset, out_dir, generator):
    randomize_batch_norm(model, generator)
    model.eval()
    x = torch.rand(input_shape, generator=generator) * 2 - 1
    with torch.no_grad():
        y = model(x)
    case_dir = os.path.join(out_dir, name)
    data_dir = os.path.join(case_dir, "test_data_set_0")
    os.makedirs(data_dir, exist_ok=True)
    model_path = os.path.join(case_dir, "model.onnx")
    torch.onnx.export(model, x, model_path, opset_version=opset, input_names=["input"],
                      output_names=["output"], do_constant_folding=True)
    onnx.checker.check_model(onnx.load(model_path))
    write_tensor(os.path.join(data_dir, "input_0.pb"), x.numpy(), "input")
    write_tensor(os.path.join(data_dir, "output_0.pb"), y.numpy(), "output")
    print(f"{name}: {model_path}, output {tuple(y.shape)}")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out_dir = sys.argv[1]
    torch.manual_seed(SEED)
    generator = torch.Generator().manual_seed(SEED)
    export("resnet18", torchvision.models.resnet18(weights=None), IMAGE_SHAPE, 13, out_dir,
           generator)
    export("mobilenet_v2", torchvision.models.mobilenet_v2(weights=None), IMAGE_SHAPE, 13,
           out_dir, generator)
    encoder = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64,
                                               activation="gelu", batch_first=True)
    export("transformer_encoder", encoder, SEQUENCE_SHAPE, 17, out_dir, generator)


if __name__ == "__main__":
    main()
