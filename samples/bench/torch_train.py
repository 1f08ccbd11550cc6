#!/usr/bin/python3
"""PyTorch reference for cltrain's training and inference speed (and accuracy).

Trains the same three models as the cltrain samples, on the CPU or (with
--device cuda) on an NVIDIA GPU, in fp32 (TF32 off):

  mlp: Flatten -> Linear(784,128) -> ReLU -> Linear(128,10)
  cnn: Conv2d(1,32,3) ReLU MaxPool2 -> Conv2d(32,64,3) ReLU MaxPool2
       -> Flatten -> Linear(64*5*5,128) ReLU -> Linear(128,10)
       ('valid' padding, as Keras's default)
  resnet: samples/fashion_resnet.model: a 16-channel stem and three basic
       blocks (conv-bn-relu-conv-bn plus the input; the second downsamples
       with a strided 1x1 projection), global average pooling, Linear(32,10)
  resnet_wide: samples/fashion_resnet_wide.model: the same with 64 and
       128 channels
  separable: samples/fashion_separable.model: a 32-channel stem, then two
       depthwise separable blocks (Conv2d(groups=C) 3x3, then 1x1, each
       with batch norm and ReLU; a max pooling between), global average
       pooling, Linear(128,10)
  mobilenet: samples/fashion_mobilenet.model: the same stem and three
       such blocks (32 -> 64 -> 128 -> 128 channels), the second and
       third depthwise convolutions of stride 2 in place of the pooling
       (28x28, 14x14, 7x7), global average pooling, Linear(128,10)
  convnext: samples/fashion_convnext.model: a 2x2 stride-2 stem, then a
       ConvNeXt block at 32 and at 64 channels (Conv2d(groups=C) 7x7,
       LayerNorm over channels, 1x1 to 4x with GELU, 1x1 back, residual),
       a normalised 2x2 stride-2 convolution between, global average
       pooling, LayerNorm, Linear(64,10)

with Adam (lr 1e-3) and cross-entropy. --amp trains in mixed precision
instead (torch.autocast to fp16 and a GradScaler, the counterpart of
cltrain's --precision mixed; CUDA only).

Benchmark mode (the default, the counterpart of `cltrain bench train`):
the data is already in memory (one fixed random batch, or real images with
--data), --warmup steps run untimed, then --steps steps of forward +
backward + Adam update are timed, and exactly one line is printed:

  torch model=mlp batch=32 threads=1 images_per_sec=12345.6

(or, with --json, the same as a JSON object).

Inference mode (--infer, the counterpart of `cltrain bench infer`): the
same data and timing, but each step is one forward pass in evaluation
mode (model.eval(): batch norm's running statistics, no dropout) under
torch.no_grad(), to the softmax's probabilities (torch.inference_mode() was
slower with PyTorch 1.13 on the CPU):

  torch model=cnn batch=64 device=cpu threads=2 images_per_sec=12345.6 mode=infer

On the CPU the line ends with blas=NAME, the kernels OpenBLAS chose (through
which Debian's PyTorch runs its matrix products); where those are its
generic ones on a CPU with AVX2 (OpenBLAS does not recognise every model: a
virtual machine's "Intel Xeon Processor" gets Prescott's), a warning on
stderr says to set OPENBLAS_CORETYPE (SkylakeX, Haswell, Zen, ...) for a
fair reference.

Training mode (--epochs E): real training on Fashion-MNIST from the IDX
.gz files in --data, printing each epoch's loss, test accuracy and
images/s, then the same one-line summary.

Run with Debian's interpreter, which has python3-torch:
  /usr/bin/python3 samples/bench/torch_train.py --model mlp --batch 32 --threads 1
"""

import argparse
import gzip
import json
import os
import struct
import sys
import time

import numpy as np
import torch
from torch import nn

DEFAULT_DATA_DIR = "/usr/share/datasets/fashion-mnist"
IMAGE_MAGIC = 2051
LABEL_MAGIC = 2049


def conv_bn(cin, cout, kernel, stride=1):
    return nn.Sequential(
        nn.Conv2d(cin, cout, kernel, stride=stride, padding=kernel // 2, bias=False),
        nn.BatchNorm2d(cout),
    )


class BasicBlock(nn.Module):
    """conv-bn-relu-conv-bn, plus the input (or its strided projection)."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = conv_bn(cin, cout, 3, stride)
        self.conv2 = conv_bn(cout, cout, 3)
        self.proj = conv_bn(cin, cout, 1, stride) if stride != 1 or cin != cout else None

    def forward(self, x):
        y = self.conv2(torch.relu(self.conv1(x)))
        return torch.relu(y + (self.proj(x) if self.proj is not None else x))


class ChannelsNorm(nn.Module):
    """LayerNorm over each pixel's channels of [N, C, H, W] (cltrain's
    layernorm over=channels, Keras's LayerNormalization on an image)."""

    def __init__(self, c, eps=1e-6):
        super().__init__()
        self.norm = nn.LayerNorm(c, eps=eps)

    def forward(self, x):
        return self.norm(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class ConvNeXtBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(c, c, 7, padding=3, groups=c), ChannelsNorm(c),
            nn.Conv2d(c, 4 * c, 1), nn.GELU(), nn.Conv2d(4 * c, c, 1))

    def forward(self, x):
        return x + self.body(x)


def build_model(name):
    if name == "convnext":
        return nn.Sequential(
            nn.Conv2d(1, 32, 2, stride=2), ChannelsNorm(32),  # 14x14
            ConvNeXtBlock(32),
            ChannelsNorm(32), nn.Conv2d(32, 64, 2, stride=2),  # 7x7
            ConvNeXtBlock(64),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.LayerNorm(64, eps=1e-6),
            nn.Linear(64, 10),
        )
    if name in ("resnet", "resnet_wide"):
        a, b = (16, 32) if name == "resnet" else (64, 128)
        return nn.Sequential(
            conv_bn(1, a, 3),
            nn.ReLU(),
            BasicBlock(a, a, 1),  # 28x28
            nn.MaxPool2d(2),  # 14x14
            BasicBlock(a, b, 2),  # 7x7
            BasicBlock(b, b, 1),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(b, 10),
        )
    if name == "separable":
        def bn_relu(c):
            return [nn.BatchNorm2d(c), nn.ReLU()]

        return nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1, bias=False), *bn_relu(32),
            nn.Conv2d(32, 32, 3, padding=1, groups=32, bias=False), *bn_relu(32),
            nn.Conv2d(32, 64, 1, bias=False), *bn_relu(64),
            nn.MaxPool2d(2),  # 28 -> 14
            nn.Conv2d(64, 64, 3, padding=1, groups=64, bias=False), *bn_relu(64),
            nn.Conv2d(64, 128, 1, bias=False), *bn_relu(128),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(128, 10),
        )
    if name == "mobilenet":
        def dw_pw(cin, cout, stride):
            return [
                nn.Conv2d(cin, cin, 3, stride=stride, padding=1, groups=cin,
                          bias=False),
                nn.BatchNorm2d(cin), nn.ReLU(),
                nn.Conv2d(cin, cout, 1, bias=False),
                nn.BatchNorm2d(cout), nn.ReLU()]

        return nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32),
            nn.ReLU(),
            *dw_pw(32, 64, 1),  # 28x28
            *dw_pw(64, 128, 2),  # 14x14
            *dw_pw(128, 128, 2),  # 7x7
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(128, 10),
        )
    if name == "mlp":
        return nn.Sequential(
            nn.Flatten(),
            nn.Linear(28 * 28, 128),
            nn.ReLU(),
            nn.Linear(128, 10),
        )
    if name == "cnn":
        return nn.Sequential(
            nn.Conv2d(1, 32, 3),  # 28 -> 26
            nn.ReLU(),
            nn.MaxPool2d(2),  # 26 -> 13
            nn.Conv2d(32, 64, 3),  # 13 -> 11
            nn.ReLU(),
            nn.MaxPool2d(2),  # 11 -> 5
            nn.Flatten(),
            nn.Linear(64 * 5 * 5, 128),
            nn.ReLU(),
            nn.Linear(128, 10),
        )
    raise ValueError("unknown model " + name)


def read_idx(path, magic, item_shape):
    """Reads an IDX file (gzip or plain) as a uint8 array [n, *item_shape]."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    ndim = len(item_shape) + 1
    header_len = 4 + 4 * ndim
    if len(data) < header_len:
        raise ValueError(f"{path}: truncated IDX header")
    (got_magic,) = struct.unpack(">I", data[:4])
    if got_magic != magic:
        raise ValueError(f"{path}: IDX magic {got_magic}, expected {magic}")
    dims = struct.unpack(">" + "I" * ndim, data[4:header_len])
    if tuple(dims[1:]) != tuple(item_shape):
        raise ValueError(f"{path}: items of shape {dims[1:]}, expected {item_shape}")
    count = int(np.prod(dims))
    if len(data) - header_len < count:
        raise ValueError(f"{path}: truncated, {len(data) - header_len} of {count} bytes")
    return np.frombuffer(data, dtype=np.uint8, count=count, offset=header_len).reshape(dims)


def find_idx(data_dir, stem):
    for name in (stem + ".gz", stem):
        path = os.path.join(data_dir, name)
        if os.path.exists(path):
            return path
    raise FileNotFoundError(f"{data_dir}: no {stem}.gz or {stem}")


def load_split(data_dir, split, limit):
    """Images as float32 [n,1,28,28] in [0,1] and labels as int64 [n]."""
    prefix = "train" if split == "train" else "t10k"
    images = read_idx(find_idx(data_dir, prefix + "-images-idx3-ubyte"), IMAGE_MAGIC, (28, 28))
    labels = read_idx(find_idx(data_dir, prefix + "-labels-idx1-ubyte"), LABEL_MAGIC, ())
    if len(images) != len(labels):
        raise ValueError(f"{data_dir}: {len(images)} {split} images but {len(labels)} labels")
    if limit:
        images, labels = images[:limit], labels[:limit]
    x = torch.from_numpy(images.astype(np.float32) / 255.0).reshape(-1, 1, 28, 28)
    y = torch.from_numpy(labels.astype(np.int64))
    return x, y


SCALER = None  # a torch.amp.GradScaler under --amp


def train_step(model, loss_fn, optimizer, x, y):
    optimizer.zero_grad(set_to_none=True)
    if SCALER is None:
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        return loss
    with torch.autocast(device_type="cuda", dtype=torch.float16):
        loss = loss_fn(model(x), y)
    SCALER.scale(loss).backward()
    SCALER.step(optimizer)
    SCALER.update()
    return loss


def infer_step(model, x):
    if SCALER is None:
        return torch.softmax(model(x), dim=1)
    with torch.autocast(device_type="cuda", dtype=torch.float16):
        return torch.softmax(model(x), dim=1)


def synchronize(device):
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def benchmark(args, model, loss_fn, optimizer):
    """Images per second of the steady-state training step."""
    if args.data:
        x_all, y_all = load_split(args.data, "train", args.train_limit)
        n_batches = len(x_all) // args.batch
        if n_batches == 0:
            sys.exit(f"torch_train.py: fewer than --batch {args.batch} training images")
        # Batches sliced once, up front: the data is already in memory.
        batches = [
            (x_all[i * args.batch:(i + 1) * args.batch].contiguous(),
             y_all[i * args.batch:(i + 1) * args.batch].contiguous())
            for i in range(min(n_batches, 64))
        ]
    else:
        gen = torch.Generator().manual_seed(args.seed)
        x = torch.rand(args.batch, 1, 28, 28, generator=gen)
        y = torch.randint(0, 10, (args.batch,), generator=gen)
        batches = [(x, y)]
    # The data already on the device, as `cltrain bench train` has it.
    batches = [(x.to(args.device), y.to(args.device)) for x, y in batches]

    if args.infer:
        model.eval()
        with torch.no_grad():
            for step in range(args.warmup):
                infer_step(model, batches[step % len(batches)][0])
            synchronize(args.device)
            start = time.perf_counter()
            for step in range(args.steps):
                out = infer_step(model, batches[step % len(batches)][0])
            out[0, 0].item()  # waits for the device
            synchronize(args.device)
            seconds = time.perf_counter() - start
        return args.steps * args.batch / seconds, seconds
    model.train()
    for step in range(args.warmup):
        x, y = batches[step % len(batches)]
        train_step(model, loss_fn, optimizer, x, y)
    synchronize(args.device)
    start = time.perf_counter()
    for step in range(args.steps):
        x, y = batches[step % len(batches)]
        loss = train_step(model, loss_fn, optimizer, x, y)
    loss.item()  # waits for the device, as cltrain reads its loss
    synchronize(args.device)
    seconds = time.perf_counter() - start
    return args.steps * args.batch / seconds, seconds


def evaluate(model, x, y, batch):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(x), batch):
            logits = model(x[i:i + batch])
            correct += int((logits.argmax(dim=1) == y[i:i + batch]).sum())
    return correct / max(len(x), 1)


def train_epochs(args, model, loss_fn, optimizer):
    """Real training; returns (images/s over all epochs, final test accuracy).

    Each epoch's line goes to stdout, or to stderr with --json so that stdout
    holds only the JSON object."""
    progress = sys.stderr if args.json else sys.stdout
    x_train, y_train = load_split(args.data, "train", args.train_limit)
    x_test, y_test = load_split(args.data, "test", args.test_limit)
    x_train, y_train = x_train.to(args.device), y_train.to(args.device)
    x_test, y_test = x_test.to(args.device), y_test.to(args.device)
    rng = np.random.default_rng(args.seed)
    total_images = 0
    total_seconds = 0.0
    accuracy = 0.0
    for epoch in range(1, args.epochs + 1):
        model.train()
        order = torch.from_numpy(rng.permutation(len(x_train))).to(args.device)
        loss_sum = 0.0
        steps = 0
        start = time.perf_counter()
        # The last, partial batch is dropped, as cltrain does by default.
        for i in range(0, len(x_train) - args.batch + 1, args.batch):
            idx = order[i:i + args.batch]
            loss = train_step(model, loss_fn, optimizer, x_train[idx], y_train[idx])
            loss_sum += loss.item()
            steps += 1
        synchronize(args.device)
        seconds = time.perf_counter() - start
        images = steps * args.batch
        total_images += images
        total_seconds += seconds
        accuracy = evaluate(model, x_test, y_test, 1000)
        print(
            f"epoch {epoch}/{args.epochs} loss={loss_sum / max(steps, 1):.4f} "
            f"test_accuracy={accuracy:.4f} images_per_sec={images / seconds:.1f} "
            f"seconds={seconds:.2f}",
            file=progress,
            flush=True,
        )
    return total_images / total_seconds, accuracy


def positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text}")
    return value


def non_negative_int(text):
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text}")
    return value


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", choices=["mlp", "cnn", "resnet", "resnet_wide",
                                       "separable", "mobilenet",
                                       "convnext"],
                   default="mlp")
    p.add_argument("--amp", action="store_true",
                   help="mixed precision: autocast to fp16 and a GradScaler (CUDA)")
    p.add_argument("--device", default="cpu",
                   help="cpu (default) or cuda (fp32, TF32 off); the data goes there first")
    p.add_argument("--infer", action="store_true",
                   help="time inference (forward passes in eval mode, no "
                        "gradients) instead of training steps")
    p.add_argument("--cudnn-benchmark", action="store_true",
                   help="let cuDNN time its convolution algorithms first "
                        "(torch.backends.cudnn.benchmark)")
    p.add_argument("--batch", type=positive_int, default=32)
    p.add_argument("--threads", type=positive_int, default=None,
                   help="torch.set_num_threads (default: PyTorch's choice)")
    p.add_argument("--steps", type=positive_int, default=200, help="timed steps")
    p.add_argument("--warmup", type=non_negative_int, default=20, help="untimed steps first")
    p.add_argument("--epochs", type=positive_int, default=None,
                   help="train for real on Fashion-MNIST instead of benchmarking")
    p.add_argument("--data", nargs="?", const=DEFAULT_DATA_DIR, default=None,
                   help=f"Fashion-MNIST IDX folder (default with --epochs: {DEFAULT_DATA_DIR})")
    p.add_argument("--train-limit", type=non_negative_int, default=0,
                   help="use only the first N training images (0: all)")
    p.add_argument("--test-limit", type=non_negative_int, default=0,
                   help="use only the first N test images (0: all)")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    args = p.parse_args(argv)
    if args.infer and args.epochs:
        p.error("--infer times inference; it does not train (--epochs)")
    if args.epochs and not args.data:
        args.data = DEFAULT_DATA_DIR
    return args


# OpenBLAS's kernels for CPUs it predates: on a CPU it does not recognise
# (a virtual machine's plain "Intel Xeon Processor", say) it falls back to
# one of these, several times slower than its AVX2 or AVX-512 ones.
GENERIC_BLAS_CORES = {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem",
                      "Atom", "Katmai", "Coppermine", "Northwood", "Banias",
                      "Opteron", "Barcelona"}


def blas_core():
    """The kernels OpenBLAS chose in this process (Debian's PyTorch does its
    CPU matrix products with OpenBLAS), or None where this PyTorch did not
    load OpenBLAS (a build on MKL, say)."""
    import ctypes
    try:
        with open("/proc/self/maps") as f:
            if "libopenblas" not in f.read():
                return None
        lib = ctypes.CDLL("libopenblas.so.0")
        lib.openblas_get_corename.restype = ctypes.c_char_p
        return lib.openblas_get_corename().decode()
    except (OSError, AttributeError):
        return None


def cpu_has_avx2():
    try:
        with open("/proc/cpuinfo") as f:
            return any(line.startswith("flags") and " avx2" in line for line in f)
    except OSError:
        return False


def warn_generic_blas(core):
    """Says so where the reference runs OpenBLAS's generic kernels on a CPU
    that has better ones: the comparison would flatter cltrain."""
    if core in GENERIC_BLAS_CORES and cpu_has_avx2():
        print(f"torch_train.py: OpenBLAS runs its generic {core} kernels on this "
              "CPU (a model it does not recognise), several times slower than "
              "it could: set OPENBLAS_CORETYPE (e.g. SkylakeX, Haswell, Zen) "
              "for a fair reference", file=sys.stderr)


def main(argv=None):
    args = parse_args(argv)
    core = None
    if args.device == "cpu":
        core = blas_core()
        warn_generic_blas(core)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.device.startswith("cuda"):
        if not torch.cuda.is_available():
            sys.exit("torch_train.py: --device cuda, but this PyTorch sees no CUDA device")
        # fp32 as cltrain computes it: no TF32 in matmuls or convolutions.
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cudnn.benchmark = args.cudnn_benchmark
    if args.amp:
        if not args.device.startswith("cuda"):
            sys.exit("torch_train.py: --amp needs --device cuda")
        global SCALER
        SCALER = torch.amp.GradScaler("cuda")
    torch.manual_seed(args.seed)
    model = build_model(args.model).to(args.device)
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    result = {
        "engine": "torch",
        "model": args.model,
        "batch": args.batch,
        "threads": torch.get_num_threads(),
        "device": args.device,
        "precision": "mixed" if args.amp else "fp32",
        "mode": "infer" if args.infer else "train",
    }
    if core:
        result["blas"] = core
    try:
        if args.epochs:
            images_per_sec, accuracy = train_epochs(args, model, loss_fn, optimizer)
            result["images_per_sec"] = round(images_per_sec, 1)
            result["epochs"] = args.epochs
            result["test_accuracy"] = round(accuracy, 4)
        else:
            images_per_sec, seconds = benchmark(args, model, loss_fn, optimizer)
            result["images_per_sec"] = round(images_per_sec, 1)
            result["steps"] = args.steps
            result["seconds"] = round(seconds, 3)
    except (OSError, ValueError) as e:  # a missing or damaged dataset
        sys.exit(f"torch_train.py: {e}")

    if args.json:
        result["torch_version"] = torch.__version__
        print(json.dumps(result))
    else:
        line = (f"torch model={result['model']} batch={result['batch']} "
                f"device={result['device']} threads={result['threads']} "
                f"images_per_sec={result['images_per_sec']:.1f}")
        if "test_accuracy" in result:
            line += f" test_accuracy={result['test_accuracy']:.4f}"
        if args.amp:
            line += " precision=mixed"
        if args.infer:
            line += " mode=infer"
        if core:
            line += f" blas={core}"
        print(line)


if __name__ == "__main__":
    main()
