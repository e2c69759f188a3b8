"""Two threads holding one shared context interleaved: A enters, B enters, A leaves while
B is still inside, B leaves (skdp._shared_setting.SharedSetting's users)."""

import threading


def run_interleaved(context, probe_in_b):
    """Run the interleaving with ``context()`` and return what ``probe_in_b()`` returned
    inside B after A had left."""
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen = []

    def thread_a():
        with context():
            a_in.set()
            b_in.wait()
        a_out.set()

    def thread_b():
        a_in.wait()
        with context():
            b_in.set()
            a_out.wait()
            seen.append(probe_in_b())

    threads = [threading.Thread(target=thread_a), threading.Thread(target=thread_b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return seen[0]
