# SPDX-License-Identifier: Apache-2.0
"""A small reader of Perfetto protobuf traces, for the tests: decodes the
wire format and the fields ncclscope writes (perfetto_proto.c lists them),
resolving interned names, so a .pftrace can be compared with the JSON."""
import struct


def fields(buf):
    """(field number, wire type, value) of one message; value is an int or bytes."""
    i, n = 0, len(buf)
    while i < n:
        key, i = varint(buf, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(buf, i)
        elif wt == 1:
            v = struct.unpack_from("<Q", buf, i)[0]
            i += 8
        elif wt == 2:
            ln, i = varint(buf, i)
            v = buf[i:i + ln]
            if len(v) != ln:
                raise ValueError("length-delimited field runs past its message")
            i += ln
        elif wt == 5:
            v = struct.unpack_from("<I", buf, i)[0]
            i += 4
        else:
            raise ValueError("wire type %d" % wt)
        yield f, wt, v


def varint(buf, i):
    x = s = 0
    while True:
        b = buf[i]
        i += 1
        x |= (b & 0x7F) << s
        if b < 0x80:
            return x, i
        s += 7
        if s > 63:
            raise ValueError("varint too long")


def read(path):
    """Returns (tracks, events): tracks by uuid, events as dicts in file order."""
    data = open(path, "rb").read()
    tracks, events = {}, []
    interned = {0: {}, 1: {}, 2: {}}
    for f, wt, pkt in fields(data):
        if f != 1 or wt != 2:
            raise ValueError("Trace holds only packets (field 1)")
        p = {k: v for k, _, v in fields(pkt)}
        if 12 in p:
            for kind, _, entry in fields(p[12]):
                e = {k: v for k, _, v in fields(entry)}
                interned[kind - 1][e[1]] = e[2].decode()
        if 60 in p:
            t = {k: v for k, _, v in fields(p[60])}
            d = {"uuid": t[1], "parent": t.get(5), "name": t[2].decode() if 2 in t else None}
            if 3 in t:
                pd = {k: v for k, _, v in fields(t[3])}
                d.update(kind="process", pid=pd[1], name=pd[6].decode() if 6 in pd else d["name"])
            elif 4 in t:
                td = {k: v for k, _, v in fields(t[4])}
                d.update(kind="thread", pid=td[1], tid=td[2], name=td[5].decode() if 5 in td else d["name"])
            elif 8 in t:
                d["kind"] = "counter"
            else:
                d["kind"] = "child"
            tracks[d["uuid"]] = d
        if 11 in p:
            ev = {"ts": p[8], "flows_out": [], "flows_in": [], "args": {}}
            for k, wt2, v in fields(p[11]):
                if k == 9:
                    ev["type"] = v
                elif k == 11:
                    ev["track"] = v
                elif k == 10:
                    ev["name"] = interned[1][v]
                elif k == 23:
                    ev["name"] = v.decode()
                elif k == 3:
                    ev["cat"] = interned[0][v]
                elif k == 22:
                    ev["cat"] = v.decode()
                elif k == 30:
                    ev["value"] = v
                elif k == 47:
                    ev["flows_out"].append(v)
                elif k == 48:
                    ev["flows_in"].append(v)
                elif k == 4:
                    a = {kk: vv for kk, _, vv in fields(v)}
                    name = interned[2][a[1]] if 1 in a else a[10].decode()
                    for vk in (2, 4, 5, 6, 9):
                        if vk in a:
                            val = a[vk]
                            if vk == 4 and val >= 1 << 63:
                                val -= 1 << 64
                            if vk == 5:
                                val = struct.unpack("<d", struct.pack("<Q", val))[0]
                            if vk in (6, 9):
                                val = val.decode()
                            ev["args"][name] = val
            events.append(ev)
    return tracks, events
