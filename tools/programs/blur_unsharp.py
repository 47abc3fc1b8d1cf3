"""Separable Gaussian blur by shifted slices and an unsharp mask on a
float32 image, in plain NumPy.

Usage::

    python tools/programs/blur_unsharp.py [height] [width] [passes]

    height, width  image size (default 2400 x 2400: 23 MB of float32)
    passes         sharpening passes with growing radius (default 3)

A synthetic grey-level float32 image in [0, 1] (smooth gradients, a grid
of discs and seeded noise).  Per pass a Gaussian kernel of radius
``2 + pass`` (sigma = radius / 2, normalised, float32) is applied along
each axis in turn by padding (``np.pad(..., mode="edge")``) and summing
shifted slices, ``out += k[t] * padded[:, t:t + width]``; the unsharp mask
is then::

    sharp = np.clip(img + amount * (img - blurred), 0.0, 1.0)

with amount 0.8, and the high-frequency energy ``mean((img -
blurred)**2)`` is reported.  The sharpened image feeds the next pass.

Output: per pass the means of the blurred and sharpened images, the
high-frequency energy and the fraction of clipped pixels (float64
accumulation, 6 significant digits).  When GRUMPY_AB_OUTDIR is set the
last blurred and sharpened images are saved there as blurred.npy and
sharp.npy.
"""

import os
import sys

import numpy as np


def test_image(h, w):
    rng = np.random.default_rng(5)
    y = np.linspace(0.0, 1.0, h, dtype=np.float32)[:, None]
    x = np.linspace(0.0, 1.0, w, dtype=np.float32)[None, :]
    img = 0.3 + 0.4 * x * y
    img = img + 0.3 * (((x * 12) % 1 - 0.5) ** 2 + ((y * 12) % 1 - 0.5) ** 2 < 0.09)
    img = img + rng.normal(0.0, 0.05, (h, w)).astype(np.float32)
    return np.clip(img, 0.0, 1.0).astype(np.float32)


def gaussian_kernel(radius):
    sigma = radius / 2.0
    t = np.arange(-radius, radius + 1, dtype=np.float32)
    k = np.exp(-0.5 * (t / np.float32(sigma)) ** 2)
    return (k / k.sum()).astype(np.float32)


def blur_axis(img, k, axis):
    r = len(k) // 2
    pad = [(0, 0), (0, 0)]
    pad[axis] = (r, r)
    padded = np.pad(img, pad, mode="edge")
    n = img.shape[axis]
    out = np.zeros_like(img)
    for t in range(len(k)):
        if axis == 0:
            out += k[t] * padded[t:t + n, :]
        else:
            out += k[t] * padded[:, t:t + n]
    return out


def main(argv):
    h = int(argv[1]) if len(argv) > 1 else 2400
    w = int(argv[2]) if len(argv) > 2 else 2400
    passes = int(argv[3]) if len(argv) > 3 else 3
    amount = np.float32(0.8)
    img = test_image(h, w)
    print(f"blur_unsharp {h}x{w} passes={passes} dtype={img.dtype}")
    blurred = sharp = None
    for p in range(passes):
        k = gaussian_kernel(2 + p)
        blurred = blur_axis(blur_axis(img, k, 1), k, 0)
        detail = img - blurred
        sharp = np.clip(img + amount * detail, 0.0, 1.0)
        energy = float(np.mean(detail**2, dtype=np.float64))
        clipped = float(np.mean((sharp == 0.0) | (sharp == 1.0)))
        print(
            f"pass {p}: radius={2 + p} mean blurred={float(blurred.mean(dtype=np.float64)):.5e} "
            f"mean sharp={float(sharp.mean(dtype=np.float64)):.5e} detail energy={energy:.5e} clipped={clipped:.5e}"
        )
        img = sharp
    out = os.environ.get("GRUMPY_AB_OUTDIR")
    if out:
        np.save(os.path.join(out, "blurred.npy"), blurred)
        np.save(os.path.join(out, "sharp.npy"), sharp)


if __name__ == "__main__":
    main(sys.argv)
