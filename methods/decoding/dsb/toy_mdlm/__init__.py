"""docket.methods.decoding.toy_mdlm: a small masked-diffusion LM (bidirectional mask predictor).

`model.py` is the network with a window KV cache (`replace_position`), `data.py` the toy corpus
(copy / reverse / sort of letter strings), `train.py` the shipped training script
(`python -m docket.methods.decoding.toy_mdlm.train --out DIR`), `checkpoint.py` saving and
loading a checkpoint directory that `docket/local -M method=dsb` reads. Only `checkpoint` and
`data` import without torch.
"""
