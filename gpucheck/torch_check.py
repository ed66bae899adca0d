"""A short PyTorch training run on the GPU, for scripts/gpu-check.

    python3 torch_check.py STEPS

A small CNN + MLP trained for STEPS steps of SGD with momentum on fixed random
data, built only from operations PyTorch runs deterministically on CUDA
(strided convolutions, not pooling; a mean-squared-error loss, not NLLLoss). Prints each few steps' loss (float.hex,
exact) and a SHA-256 of every parameter's bytes: stdout must be the same with
and without gpuguard. Also prints "TIME train_s S" (the timed steps, after
warm-up) and "MEM used_bytes N" (device memory in use by then, from the
driver), which the caller leaves out of the comparison.
"""
import hashlib
import os
import sys
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def param_bytes(t):
    t = t.detach().cpu().contiguous().view(-1)
    try:
        return t.numpy().tobytes()
    except Exception:  # no NumPy: the exact bit patterns another way
        return str(t.view(torch.int32).tolist()).encode()


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    torch.manual_seed(0)
    try:
        torch.use_deterministic_algorithms(True, warn_only=True)
    except TypeError:  # PyTorch < 1.11
        torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")

    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(),
        nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
        nn.Flatten(), nn.Linear(32 * 8 * 8, 512), nn.ReLU(), nn.Linear(512, 10),
    ).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(512, 3, 32, 32, generator=g).to(dev)
    labels = torch.randint(0, 10, (512,), generator=g)
    y = torch.zeros(512, 10)
    y[torch.arange(512), labels] = 1.0  # one-hot, made on the host
    y = y.to(dev)

    def step(i):
        xb, yb = x[(i % 8) * 64:(i % 8 + 1) * 64], y[(i % 8) * 64:(i % 8 + 1) * 64]
        opt.zero_grad(set_to_none=True)
        loss = F.mse_loss(model(xb), yb)
        loss.backward()
        opt.step()
        return loss

    for i in range(3):  # warm-up: kernels loaded, workspaces allocated
        step(i)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(3, 3 + steps):
        loss = step(i)
        if i % 50 == 0:
            print("step", i, "loss", loss.item().hex())
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    print("final loss", loss.item().hex())
    h = hashlib.sha256()
    for name, p in model.named_parameters():
        h.update(name.encode())
        h.update(param_bytes(p))
    print("parameters sha256", h.hexdigest())
    free, total = torch.cuda.mem_get_info()
    print("TIME train_s %.6f" % (t1 - t0))
    print("MEM used_bytes %d" % (total - free))


if __name__ == "__main__":
    main()
