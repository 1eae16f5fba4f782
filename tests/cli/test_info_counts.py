# SPDX-License-Identifier: Apache-2.0
"""ncclscope info's record counts add up. The threads' "records in file"
count every record of the file, the "records" line counts them as read (a
START and its EXT are one record): on h200x2_mixed_64KiB they were 8,220
and 8,020 with nothing saying why. The "in file" line gives the file's
total and the EXT records that make the difference."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
from nsctest import check, data_dir, env_paths, run, trace_files  # noqa: E402


def main():
    cli, _, _ = env_paths()
    data = data_dir()
    files = [os.path.join(data, f) for f in ("h200x2_mixed_64KiB.nsc", "h200x2_net_1MiB.nsc",
                                             "torch_ddp_2rank.nsc")]
    files += trace_files(os.path.join(data, "h200x4_procs"))
    for f in files:
        text = run([cli, "info", f]).stdout
        m = re.search(r"^records\s+(\d+) \(start (\d+), stop (\d+), state (\d+)\)$", text, re.M)
        check(m, "records line: %s" % text)
        read = int(m.group(1))
        m = re.search(r"^in file\s+(\d+) records: these, (\d+) EXT \(the rest of a START's descriptor\)$",
                      text, re.M)
        check(m, "%s: an 'in file' line of the file's records and EXTs:\n%s" % (f, text))
        in_file, ext = int(m.group(1)), int(m.group(2))
        per_thread = sum(int(n) for n in re.findall(r"^  #\d+ tid \d+ \"[^\"]*\": (\d+) records in file",
                                                   text, re.M))
        check(in_file == per_thread, "%s: in file %d, the threads' sum %d" % (f, in_file, per_thread))
        check(in_file == read + ext and ext > 0, "%s: %d in file = %d read + %d EXT" % (f, in_file, read, ext))
        if f.endswith("h200x2_mixed_64KiB.nsc"):
            check((read, ext, in_file) == (8020, 200, 8220), "mixed: %d + %d = %d" % (read, ext, in_file))
    print("ok: info: %d files, records read + EXT = records in file = the threads' sum" % len(files))


if __name__ == "__main__":
    main()
