#!/usr/bin/env python3
"""Exports PyTorch networks to ONNX with libtorch's output as the expected result.

Usage: export_torchvision.py OUT_DIR [--image-size N] [--only NAME,...]

Writes, for each network NAME, the layout of ONNX's backend tests:
  OUT_DIR/NAME/model.onnx
  OUT_DIR/NAME/test_data_set_0/input_0.pb   (1x3x64x64 float32)
  OUT_DIR/NAME/test_data_set_0/output_0.pb  (libtorch's output in eval mode)

Networks: torchvision ResNet-18 and MobileNetV2 (opset 13, input 1x3x64x64 rather
than 224x224 to keep the Halide reference runs of CI short; --image-size 224 for the
networks of docs/NETWORKS.md); the rest of the corpus of docs/NETWORKS.md, exported
only when named in --only (opset 17): ResNet-50, ResNeXt-50 32x4d, DenseNet-121,
Inception-v3 (at 299x299 when --image-size is 224, the size it was made for),
MobileNetV3-Large, ConvNeXt-Tiny and ViT-B/16 (224x224 whatever --image-size says: its
position embedding fixes the size); and one PyTorch
TransformerEncoderLayer (opset 17, input 1x16x32: d_model 32, 4 heads, GELU), whose
export computes reshape targets from Shape/Gather/Slice subgraphs and uses
LayerNormalization. The weights are random (torch.manual_seed, weights=None:
nothing is downloaded) and batch-norm statistics are randomized too, so that
folding them matters.
"""
import argparse
import os
import sys

import torch
import torchvision
import onnx
from onnx import numpy_helper

IMAGE_SHAPE = (1, 3, 64, 64)
# The corpus of docs/NETWORKS.md: name -> (constructor, image size from --image-size).
CORPUS = {
    "resnet50": (lambda: torchvision.models.resnet50(weights=None), lambda size: size),
    "resnext50_32x4d": (lambda: torchvision.models.resnext50_32x4d(weights=None), lambda size: size),
    "densenet121": (lambda: torchvision.models.densenet121(weights=None), lambda size: size),
    "inception_v3": (lambda: torchvision.models.inception_v3(
        weights=None, aux_logits=False, init_weights=True), lambda size: size * 299 // 224),
    "mobilenet_v3_large": (lambda: torchvision.models.mobilenet_v3_large(weights=None), lambda size: size),
    "convnext_tiny": (lambda: torchvision.models.convnext_tiny(weights=None), lambda size: size),
    "vit_b_16": (lambda: torchvision.models.vit_b_16(weights=None), lambda size: 224),
}
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
    parser = argparse.ArgumentParser(usage=__doc__)
    parser.add_argument("out_dir")
    parser.add_argument("--image-size", type=int, default=IMAGE_SHAPE[2])
    parser.add_argument("--only", default="resnet18,mobilenet_v2,transformer_encoder")
    args = parser.parse_args()
    only = set(args.only.split(","))
    unknown = only - {"resnet18", "mobilenet_v2", "transformer_encoder"} - set(CORPUS)
    if unknown:
        sys.exit(f"export_torchvision.py: unknown network(s) {', '.join(sorted(unknown))}")
    image_shape = (1, 3, args.image_size, args.image_size)
    torch.manual_seed(SEED)
    generator = torch.Generator().manual_seed(SEED)
    # Every network is built, so that their weights do not depend on --only.
    networks = [
        ("resnet18", torchvision.models.resnet18(weights=None), image_shape, 13),
        ("mobilenet_v2", torchvision.models.mobilenet_v2(weights=None), image_shape, 13),
        ("transformer_encoder",
         torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64,
                                          activation="gelu", batch_first=True),
         SEQUENCE_SHAPE, 17),
    ]
    for name, model, shape, opset in networks:
        if name in only:
            export(name, model, shape, opset, args.out_dir, generator)
    # The corpus is built after them, and only what is asked for: each network's weights
    # come from a generator of its own.
    for name in sorted(only & set(CORPUS)):
        build, image_size = CORPUS[name]
        torch.manual_seed(SEED)
        generator = torch.Generator().manual_seed(SEED)
        size = image_size(args.image_size)
        export(name, build(), (1, 3, size, size), 17, args.out_dir, generator)


if __name__ == "__main__":
    main()
