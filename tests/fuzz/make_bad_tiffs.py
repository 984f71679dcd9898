#!/usr/bin/python3
"""tests/fuzz/make_bad_tiffs.py: the malformed-TIFF corpus (tests/fuzz/corpus_tiff_bad/), crafted
byte by byte so that each file carries exactly one defect, and its manifest (EXPECTED: file name |
a fragment the one-line error must contain). The files are committed; rerun this to regenerate:

    /usr/bin/python3 tests/fuzz/make_bad_tiffs.py tests/fuzz/corpus_tiff_bad
"""
import os
import struct
import sys
import zlib

SHORT, LONG, LONG8 = 3, 4, 16


def tiff(tags, data=b"", big=False, endian="<", ifd_at=None, next_ifd=0):
    """A one-IFD TIFF: tags {tag: (type, [values])}; data goes right after the header, tag values
    that are offsets are given by the caller relative to the file. Out-of-line values follow
    the IFD."""
    e = endian
    head = (b"II" if e == "<" else b"MM") + (struct.pack(e + "HHHQ", 43, 8, 0, 0) if big else struct.pack(e + "HI", 42, 0))
    hsize = len(head)
    body = bytearray(head + data)
    ifd_off = ifd_at if ifd_at is not None else len(body)
    entries = sorted(tags.items())
    n = len(entries)
    esize = 20 if big else 12
    ifd_len = (8 if big else 2) + n * esize + (8 if big else 4)
    extra_off = ifd_off + ifd_len
    extra = bytearray()
    ifd = bytearray(struct.pack(e + ("Q" if big else "H"), n))
    inline = 8 if big else 4
    for tag, (typ, vals) in entries:
        fmt = {SHORT: "H", LONG: "I", LONG8: "Q"}[typ]
        raw = struct.pack(e + fmt * len(vals), *vals)
        if len(raw) <= inline:
            val = raw + b"\0" * (inline - len(raw))
        else:
            val = struct.pack(e + ("Q" if big else "I"), extra_off + len(extra))
            extra += raw
        ifd += struct.pack(e + "HH" + ("Q" if big else "I"), tag, typ, len(vals)) + val
    ifd += struct.pack(e + ("Q" if big else "I"), next_ifd)
    if ifd_at is None:
        body += ifd + extra
    # the header's IFD offset
    if big:
        body[8:16] = struct.pack(e + "Q", ifd_off)
    else:
        body[4:8] = struct.pack(e + "I", ifd_off)
    return bytes(body), hsize


def rgb_tiled(w=32, h=32, tw=16, th=16, spp=3, bps=8, override=None, drop=(), lie=None, big=False, compress=True):
    """A valid tiled RGB TIFF (deflate) unless override/drop/lie change a tag."""
    ntx, nty = (w + tw - 1) // tw, (h + th - 1) // th
    tiles = []
    for i in range(ntx * nty):
        raw = bytes(((i * 7 + k) % 251) for k in range(tw * th * spp * bps // 8))
        tiles.append(zlib.compress(raw) if compress else raw)
    hsize = 16 if big else 8
    offsets, off = [], hsize
    for t in tiles:
        offsets.append(off)
        off += len(t)
    counts = [len(t) for t in tiles]
    if lie:
        offsets, counts = lie(offsets, counts, off)
    L = LONG8 if big else LONG
    tags = {256: (LONG, [w]), 257: (LONG, [h]), 258: (SHORT, [bps] * max(spp, 1) if spp < 16 else [bps]), 259: (SHORT, [8 if compress else 1]),
            262: (SHORT, [2]), 277: (SHORT, [spp]), 284: (SHORT, [1]), 322: (LONG, [tw]), 323: (LONG, [th]),
            324: (L, offsets), 325: (L, counts)}
    for k in drop:
        tags.pop(k, None)
    if override:
        tags.update(override)
    return tiff(tags, b"".join(tiles), big=big)[0]


def rgb_striped(w=32, h=32, rps=8, override=None, lie=None):
    strips = [zlib.compress(bytes(((i + k) % 251) for k in range(w * rps * 3))) for i in range((h + rps - 1) // rps)]
    offsets, off = [], 8
    for s in strips:
        offsets.append(off)
        off += len(s)
    counts = [len(s) for s in strips]
    if lie:
        offsets, counts = lie(offsets, counts, off)
    tags = {256: (LONG, [w]), 257: (LONG, [h]), 258: (SHORT, [8, 8, 8]), 259: (SHORT, [8]), 262: (SHORT, [2]), 273: (LONG, offsets),
            277: (SHORT, [3]), 278: (LONG, [rps]), 279: (LONG, counts), 284: (SHORT, [1])}
    if override:
        tags.update(override)
    return tiff(tags, b"".join(strips))[0]


def main(out):
    os.makedirs(out, exist_ok=True)
    good = rgb_tiled()
    cases = {
        # name: (bytes, expected fragment of the one-line error)
        "truncated_half.tif": (good[: len(good) // 2], "TIFF"),
        "truncated_header.tif": (good[:6], "TIFF"),
        "ifd_past_end.tif": (good[:4] + struct.pack("<I", 1 << 30) + good[8:], "TIFF"),
        "tile_offset_past_end.tif": (rgb_tiled(lie=lambda o, c, end: ([o[0], 1 << 30] + o[2:], c)), "past the end of the file"),
        "tile_count_past_end.tif": (rgb_tiled(lie=lambda o, c, end: (o, [c[0], 1 << 28] + c[2:])), "past the end of the file"),
        "tile_count_zero.tif": (rgb_tiled(lie=lambda o, c, end: (o, [0] + c[1:])), "byte count 0"),
        "tile_count_short.tif": (rgb_tiled(lie=lambda o, c, end: (o, [3] + c[1:])), "cannot decode"),
        "strip_offset_past_end.tif": (rgb_striped(lie=lambda o, c, end: (o[:-1] + [end + 100], c)), "past the end of the file"),
        "strip_count_lies.tif": (rgb_striped(lie=lambda o, c, end: (o, c[:-1] + [1 << 30])), "past the end of the file"),
        "zero_width.tif": (rgb_tiled(override={256: (LONG, [0])}), "TIFF"),
        "zero_height.tif": (rgb_tiled(override={257: (LONG, [0])}), "TIFF"),
        "huge_dims.tif": (rgb_tiled(override={256: (LONG, [1000000]), 257: (LONG, [1000000])}), "TIFF"),
        "huge_width.tif": (rgb_tiled(override={256: (LONG, [4294967295]), 257: (LONG, [1])}), "TIFF"),
        "spp_0.tif": (rgb_tiled(override={277: (SHORT, [0])}), "TIFF"),
        "spp_65535.tif": (rgb_tiled(override={277: (SHORT, [65535])}), "TIFF"),
        "bps_0.tif": (rgb_tiled(override={258: (SHORT, [0, 0, 0])}), "TIFF"),
        "bps_12.tif": (rgb_tiled(override={258: (SHORT, [12, 12, 12])}), "TIFF"),
        "tile_width_0.tif": (rgb_tiled(override={322: (LONG, [0])}), "TIFF"),
        "tile_huge.tif": (rgb_tiled(override={322: (LONG, [65536]), 323: (LONG, [65536])}), "TIFF"),
        "rows_per_strip_0.tif": (rgb_striped(override={278: (LONG, [0])}), "TIFF"),
        "missing_offsets.tif": (rgb_tiled(drop=(324,)), "TIFF"),
        "photometric_99.tif": (rgb_tiled(override={262: (SHORT, [99])}), "TIFF"),
        # libtiff itself reads a palette image without a colour map as gray: a clean read is fine
        "palette_without_colormap.tif": (rgb_tiled(spp=1, override={262: (SHORT, [3]), 258: (SHORT, [8])}), ""),
        "bigtiff_offset_past_end.tif": (rgb_tiled(big=True, lie=lambda o, c, end: ([1 << 40] + o[1:], c)), "past the end of the file"),
        "bigtiff_count_lies.tif": (rgb_tiled(big=True, lie=lambda o, c, end: (o, [1 << 40] + c[1:])), "past the end of the file"),
    }
    # an IFD whose next-IFD pointer loops to itself (libtiff must not spin)
    loop, _ = tiff({256: (LONG, [8]), 257: (LONG, [8]), 258: (SHORT, [8]), 262: (SHORT, [1]), 273: (LONG, [8]), 279: (LONG, [64])},
                   b"\0" * 64, next_ifd=72)
    cases["ifd_loop.tif"] = (loop, "")
    with open(os.path.join(out, "EXPECTED"), "w") as manifest:
        manifest.write("# file|fragment the one-line error must contain (empty: any clear error, or a clean read)\n")
        for name, (data, frag) in sorted(cases.items()):
            with open(os.path.join(out, name), "wb") as f:
                f.write(data)
            manifest.write("%s|%s\n" % (name, frag))
    print("wrote %d files to %s" % (len(cases), out))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus_tiff_bad"))
