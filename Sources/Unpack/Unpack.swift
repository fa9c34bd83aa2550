// The Unpack stage.
