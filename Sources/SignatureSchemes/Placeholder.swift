// SignatureSchemes: filled in by its owner.
