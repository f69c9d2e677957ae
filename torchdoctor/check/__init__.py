"""The ``check`` command's wing: facts and their typed record (record/), gathering them through the
probes (gather.py), reading a pasted collect_env report (collect_env.py), finding the interpreter
(interpreter.py), and judging them (engine.py, pipeline.py, checks/)."""
