"""DSB's toy masked-diffusion LM (a small bidirectional mask predictor).

`model.py` is the network with a window KV cache (`replace_position`), `data.py` the toy corpus
(copy / reverse / sort of letter strings), `train.py` training
(`train`; the CLI is `methods/decoding/scripts/train_toy_mdlm.py --out DIR`), `checkpoint.py`
saving and loading a checkpoint directory that `docket/local -M method=dsb` reads. Only
`checkpoint` and `data` import without torch.
"""
