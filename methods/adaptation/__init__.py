"""Adaptation methods: SHINE (context -> LoRA in one pass) and FedPissa (federated PiSSA-LoRA).

Modules: `lora.py` (per-layer LoRA layout, functional per-sample LoRA through forward hooks,
PEFT export), `shine.py` (memory extraction, M2P transformer, training loops, the `docket/local`
plugin `-M method=shine`), `fedpissa.py` (PiSSA init, selective aggregation, decorrelated
projection, byte accounting) and `flower_app.py` (Flower strategies and apps). See README.md.
"""
