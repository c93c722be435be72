"""FLASH: spectral shaping of visual heads' attention (`algorithm`) and its `docket/local` plugin
(`plugin`)."""
