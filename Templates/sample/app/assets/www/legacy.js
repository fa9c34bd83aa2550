// A file the sample patch deletes.
