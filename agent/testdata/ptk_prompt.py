# A prompt_toolkit prompt loop for TestPromptToolkitNeverLoses: each prompt
# is logged (as the fake agent logs: {"prompt", "at", "pid"} per line to
# $PTK_LOG), then the program works for $PTK_BUSY seconds reading nothing,
# its terminal cooked, as a REPL or an agent CLI built on prompt_toolkit does.
import json, os, time
from prompt_toolkit import PromptSession

log = open(os.environ["PTK_LOG"], "a")
busy = float(os.environ.get("PTK_BUSY", "1"))
session = PromptSession()
while True:
    try:
        text = session.prompt("> ")
    except (EOFError, KeyboardInterrupt):
        continue
    log.write(json.dumps({"prompt": text, "at": int(time.time() * 1000), "pid": os.getpid()}) + "\n")
    log.flush()
    print("working...", flush=True)
    time.sleep(busy)
    print("done", flush=True)
