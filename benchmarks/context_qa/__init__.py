"""docket/context_qa: answer questions about a context given in the prompt, as a SHINE adapter,
or not at all."""
