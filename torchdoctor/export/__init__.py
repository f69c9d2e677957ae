"""The ``audit`` command's wing: is a model ready for torch.export / ONNX? The in-process model audit
(model_audit.py), the export checklist (checklist.py), the export itself and its diagnosis
(audit.py, diagnose.py, devices.py, compare.py), and the child-process report (report.py)."""
