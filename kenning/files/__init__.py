"""Files and folders as documents (docs/files.md): read text, Markdown, HTML, PDF, DOCX, PPTX,
XLSX/CSV and JSON into Markdown-shaped text the chunker cuts by structure, and plan a folder
sync against what the store holds."""

from ._convert import FORMATS, format_of
from ._read import DEFAULT_EXCLUDE, FileDocument, Matcher, ReadResult, find_files, is_files, read_document, read_paths
from ._sync import SyncPlan, check_file_options, check_sync_folder, plan_sync

__all__ = [
    "DEFAULT_EXCLUDE",
    "FORMATS",
    "FileDocument",
    "Matcher",
    "ReadResult",
    "SyncPlan",
    "check_file_options",
    "check_sync_folder",
    "find_files",
    "format_of",
    "is_files",
    "plan_sync",
    "read_document",
    "read_paths",
]
