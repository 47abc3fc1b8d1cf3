"""Edge detection on an 8-bit RGB image: sRGB decoding, luminance, Sobel
gradient magnitude, thresholding, and gamma-corrected 8-bit output, in
plain NumPy.

Usage::

    python tools/programs/sobel_gamma.py [height] [width] [frames]

    height, width  image size (default 1500 x 2000: a 9 MB uint8 RGB image)
    frames         frames processed, each a shifted copy of the scene
                   (default 3)

Per frame, the way an image-processing script does it:

1. ``rgb.astype(np.float32) / 255``, then sRGB to linear light with the
   piecewise formula ``np.where(c <= 0.04045, c / 12.92, ((c + 0.055) /
   1.055) ** 2.4)``;
2. luminance ``0.2126 R + 0.7152 G + 0.0722 B`` from the channel views
   ``lin[..., 0]`` etc. (strided);
3. the Sobel gradients as sums of eight shifted slices each, the
   magnitude ``np.sqrt(gx * gx + gy * gy)``, and an edge mask
   ``mag > 0.25 * mag.max()`` (bool);
4. display: the magnitude normalised, gamma-encoded ``np.clip(mag /
   mag.max(), 0, 1) ** (1 / 2.2)`` and quantised to uint8 by
   ``(enc * 255 + 0.5).astype(np.uint8)``.

Output: per frame the mean luminance and mean magnitude (5 significant
digits), the edge-pixel count, and the mean of the 8-bit output (4
significant digits).  When GRUMPY_AB_OUTDIR is set the last luminance,
magnitude and gamma-encoded float image are saved there as lum.npy,
mag.npy and enc.npy.  The uint8 image is summarised, not saved: the power
``** (1 / 2.2)`` may legitimately differ by an ULP, which moves a value
that lies on a rounding boundary to the next integer.
"""

import os
import sys

import numpy as np


def scene(h, w):
    rng = np.random.default_rng(11)
    y = np.arange(h)[:, None]
    x = np.arange(w)[None, :]
    r = (128 + 100 * np.sin(x / 37.0) * np.cos(y / 53.0)).astype(np.uint8)
    g = ((x // 64 + y // 64) % 2 * 160 + 40).astype(np.uint8)
    b = ((x * 255) // w).astype(np.uint8) * np.ones((h, 1), dtype=np.uint8)
    rgb = np.stack([r, g, b], axis=-1)
    noise = rng.integers(0, 16, size=rgb.shape, dtype=np.uint8)
    return rgb // 2 + noise * 4


def srgb_to_linear(rgb):
    c = rgb.astype(np.float32) / np.float32(255)
    return np.where(
        c <= 0.04045, c / np.float32(12.92), ((c + np.float32(0.055)) / np.float32(1.055)) ** np.float32(2.4)
    )


def sobel(Y):
    gx = (Y[:-2, 2:] + 2 * Y[1:-1, 2:] + Y[2:, 2:]) - (Y[:-2, :-2] + 2 * Y[1:-1, :-2] + Y[2:, :-2])
    gy = (Y[2:, :-2] + 2 * Y[2:, 1:-1] + Y[2:, 2:]) - (Y[:-2, :-2] + 2 * Y[:-2, 1:-1] + Y[:-2, 2:])
    return np.sqrt(gx * gx + gy * gy)


def main(argv):
    h = int(argv[1]) if len(argv) > 1 else 1500
    w = int(argv[2]) if len(argv) > 2 else 2000
    frames = int(argv[3]) if len(argv) > 3 else 3
    base = scene(h, w)
    print(f"sobel_gamma {h}x{w} frames={frames}")
    lum = mag = enc = None
    for f in range(frames):
        rgb = np.roll(base, 7 * f, axis=1)
        lin = srgb_to_linear(rgb)
        lum = np.float32(0.2126) * lin[..., 0] + np.float32(0.7152) * lin[..., 1] + np.float32(0.0722) * lin[..., 2]
        mag = sobel(lum)
        peak = mag.max()
        edges = mag > 0.25 * peak
        enc = np.clip(mag / peak, 0.0, 1.0) ** np.float32(1 / 2.2)
        out8 = (enc * 255 + 0.5).astype(np.uint8)
        print(
            f"frame {f}: mean luminance={float(lum.mean(dtype=np.float64)):.4e} "
            f"mean |grad|={float(mag.mean(dtype=np.float64)):.4e} edges={int(np.count_nonzero(edges))} "
            f"mean 8-bit={float(out8.mean()):.3e}"
        )
    out = os.environ.get("GRUMPY_AB_OUTDIR")
    if out:
        np.save(os.path.join(out, "lum.npy"), lum)
        np.save(os.path.join(out, "mag.npy"), mag)
        np.save(os.path.join(out, "enc.npy"), enc)


if __name__ == "__main__":
    main(sys.argv)
