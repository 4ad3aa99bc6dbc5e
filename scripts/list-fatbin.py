#!/usr/bin/env python3
"""List the CUDA fatbin entries embedded in an ELF shared object (section .nv_fatbin), like
`cuobjdump --list-elf --list-ptx`, which this CUDA installation does not ship.

Usage: scripts/list-fatbin.py FILE [--require ARCH,...]
  FILE       an ELF file with a .nv_fatbin section (e.g. build/lib/libnccl-profiler-scout.so)
             or a raw fatbin (nvcc -fatbin output)
  --require  comma-separated entries that must be present: sm_XX = machine code (ELF) for
             that architecture, compute_XX = PTX for it. Exit status 1 if any is missing.

Output, one line per entry (docs/fingerprint.md, "Checking on a GPU"):
  ELF sm_90 486136 bytes
  PTX compute_100 120320 bytes (compressed)
Exit status 2 when the file has no fatbin (e.g. nvcc was absent at build time) or is malformed.

Format facts used (public knowledge of the fatbin container): a fatbin starts with the 16-byte
header {u32 magic 0xBA55ED50, u16 version, u16 header size, u64 payload size}; the payload is a
sequence of entries, each with a header {u16 kind (1 PTX, 2 ELF), u16 version, u32 header
size, u64 payload size, ..., u32 arch at offset 28 (e.g. 90), ..., u64 flags at 40 (0x2000 and
0x8000: compressed)} followed by its payload. Several fatbins may be concatenated in a section.
"""
import struct
import sys

FATBIN_MAGIC = 0xBA55ED50
KIND_NAMES = {1: "PTX", 2: "ELF"}


def nv_fatbin_section(data):
    """Returns the bytes of section .nv_fatbin of an ELF64 little-endian file, or None."""
    if data[:4] != b"\x7fELF":
        return None
    if data[4] != 2 or data[5] != 1:
        raise ValueError("only ELF64 little-endian files are supported")
    e_shoff, = struct.unpack_from("<Q", data, 0x28)
    e_shentsize, e_shnum, e_shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    def section(i):
        name, stype, flags, addr, off, size = struct.unpack_from("<IIQQQQ", data, e_shoff + i * e_shentsize)
        return name, stype, off, size
    _, _, str_off, str_size = section(e_shstrndx)
    names = data[str_off:str_off + str_size]
    for i in range(e_shnum):
        name_off, stype, off, size = section(i)
        end = names.index(b"\0", name_off)
        if names[name_off:end] == b".nv_fatbin":
            return data[off:off + size]
    return None


def entries(blob):
    """Yields (kind, arch, size, compressed) for every entry of every fatbin in blob."""
    pos = 0
    while pos + 16 <= len(blob):
        magic, version, header_size, payload = struct.unpack_from("<IHHQ", blob, pos)
        if magic != FATBIN_MAGIC:
            if any(blob[pos:]):
                raise ValueError("bad fatbin magic 0x%08x at offset %d" % (magic, pos))
            return  # trailing alignment padding
        off = pos + header_size
        end = off + payload
        if end > len(blob):
            raise ValueError("fatbin at offset %d runs past the section end" % pos)
        while off + 64 <= end:
            kind, _ver, ehdr, size = struct.unpack_from("<HHIQ", blob, off)
            arch, = struct.unpack_from("<I", blob, off + 28)
            flags, = struct.unpack_from("<Q", blob, off + 40)
            if ehdr < 64 or off + ehdr + size > end:
                raise ValueError("malformed entry header at offset %d" % off)
            yield kind, arch, size, bool(flags & 0xA000)
            off += ehdr + size
        pos = (end + 7) & ~7


def main(argv):
    args = [a for a in argv[1:]]
    require = []
    if "--require" in args:
        i = args.index("--require")
        if i + 1 >= len(args):
            print("--require needs a list, e.g. sm_80,sm_90", file=sys.stderr)
            return 2
        require = [r for r in args[i + 1].split(",") if r]
        del args[i:i + 2]
    if len(args) != 1:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    path = args[0]
    try:
        data = open(path, "rb").read()
        blob = nv_fatbin_section(data)
        if blob is None:
            if data[:4] == struct.pack("<I", FATBIN_MAGIC):
                blob = data
            else:
                print("%s: no .nv_fatbin section (built without nvcc?)" % path, file=sys.stderr)
                return 2
        found = []
        for kind, arch, size, compressed in entries(blob):
            name = ("sm_%d" if kind == 2 else "compute_%d") % arch
            found.append(name)
            print("%s %s %d bytes%s" % (KIND_NAMES.get(kind, "kind%d" % kind), name, size,
                                       " (compressed)" if compressed else ""))
    except (OSError, ValueError, struct.error) as e:
        print("%s: %s" % (path, e), file=sys.stderr)
        return 2
    if not found:
        print("%s: the fatbin section is empty (built without nvcc?)" % path, file=sys.stderr)
        return 2
    missing = [r for r in require if r not in found]
    if missing:
        print("%s: missing %s" % (path, ", ".join(missing)), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
