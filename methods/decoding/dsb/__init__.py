"""DSB: Dynamic Sliding Block decoding and DSB Cache (`algorithm`), its `docket/local` plugin
(`plugin`) and the toy masked-diffusion LM it is tested and measured on (`toy_mdlm`)."""
