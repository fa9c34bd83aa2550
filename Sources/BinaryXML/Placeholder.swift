// BinaryXML: filled in by its owner.
