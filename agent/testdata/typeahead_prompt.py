# A prompt loop that keeps typeahead, as prompt_toolkit does, with its
# timing pinned down (TestTypeaheadNotTypedTwice). It reads its prompt with
# the terminal raw and shows what it reads. When a line is submitted it logs
# it ({"prompt", "at", "pid"} per line to $TA_LOG), prints "working...", and
# goes on reading, raw and silent, for $TA_KEEP seconds, keeping what it
# reads (prompt_toolkit reads on while it finishes a prompt, waiting for the
# terminal's answers, and keeps those keys for the next prompt). Then it
# works for $TA_BUSY seconds with its terminal cooked, reading nothing, so
# the kernel echoes and edits what is typed meanwhile (an erase key typed
# then acts on the kernel's line, not on what the program kept). Then it
# goes raw again and handles what it kept, then what the terminal holds,
# as typed at its new prompt.
import json, os, select, termios, time, tty

fd = 0
log = open(os.environ["TA_LOG"], "a")
keep = float(os.environ.get("TA_KEEP", "2"))
busy = float(os.environ.get("TA_BUSY", "6"))
cooked = termios.tcgetattr(fd)


def write(s):
    os.write(1, s.encode())


def read_for(seconds):
    got = bytearray()
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            got += os.read(fd, 4096)
    return got


pending = bytearray()
line = bytearray()
tty.setraw(fd, termios.TCSANOW)
write("typeahead prompt ready\r\n> ")
while True:
    if not pending:
        pending += os.read(fd, 4096)
    c = pending.pop(0)
    if c in (13, 10):
        text = line.decode(errors="replace")
        line.clear()
        log.write(json.dumps({"prompt": text, "at": int(time.time() * 1000), "pid": os.getpid()}) + "\n")
        log.flush()
        write("\r\nworking...\r\n")
        pending += read_for(keep)
        termios.tcsetattr(fd, termios.TCSANOW, cooked)
        time.sleep(busy)
        write("done\n")
        tty.setraw(fd, termios.TCSANOW)
        write("> ")
    elif c == 0x15 and line:  # Ctrl-U: kill the line, drawn again empty
        shown = 2 + len(line.decode(errors="replace"))  # "> " and the text
        up = (shown - 1) // os.get_terminal_size(1).columns
        write(("\x1b[%dA" % up if up else "") + "\r\x1b[J> ")
        line.clear()
    elif c in (0x7F, 0x08):
        s = line.decode(errors="replace")
        if s:
            line[:] = s[:-1].encode()
            write("\b \b")
    elif c >= 0x20:
        line.append(c)
        os.write(1, bytes([c]))
