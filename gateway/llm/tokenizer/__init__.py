"""Text <-> token ids for a GGUF model: bpe.py (the Tokenizer), chat_template.py (the GGUF's jinja
chat template), metadata.py (the file's tokenizer.* keys)."""

from gateway.llm.tokenizer.bpe import StreamDecoder, Tokenizer, TokenizerError
from gateway.llm.tokenizer.chat_template import ChatTemplate, ChatTemplateError
from gateway.llm.tokenizer.metadata import TokenizerMetadata, TokenizerMetadataError, read_tokenizer_metadata

__all__ = ["Tokenizer", "TokenizerError", "StreamDecoder", "ChatTemplate", "ChatTemplateError",
           "TokenizerMetadata", "TokenizerMetadataError", "read_tokenizer_metadata"]
