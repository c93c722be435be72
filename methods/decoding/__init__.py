"""docket.methods.decoding: decoding methods plugged into `docket/local`, one package each
(`dsb`, `dustin`, `flash`), sharing `attention` and the `-M` value parsers in `knobs`."""
