// sewerplan upload forms (the Data page's upload, the validation report's "Add a layer"): a file larger than the
// server accepts is refused here, before a byte is sent, so a planner does not wait for 200 MB to travel only to be
// refused. The form carries the limit (data-max-bytes, the app's MAX_CONTENT_LENGTH) and the sentence the server's
// 413 page gives (data-too-large, gisapp/errors.py upload_too_large), with {size} where the file's size goes.
(function () {
  "use strict";

  // A size as gisapp/words.py size_words writes it: "250.3 MB", "12 KB", "900 bytes" (tenths, half up).
  function sizeWords(n) {
    for (const [unit, name] of [[1048576, "MB"], [1024, "KB"]]) {
      if (n >= unit) {
        const tenths = Math.floor((n * 10 + unit / 2) / unit);
        const whole = Math.floor(tenths / 10);
        const tenth = tenths % 10;
        return tenth ? `${whole}.${tenth} ${name}` : `${whole} ${name}`;
      }
    }
    return `${n} bytes`;
  }

  for (const form of document.querySelectorAll("form[data-max-bytes]")) {
    // getAttribute, not form.dataset: a form's named fields shadow its properties, and the upload's file field is
    // named "dataset".
    const limit = Number(form.getAttribute("data-max-bytes"));
    const sentence = form.getAttribute("data-too-large") || "";
    const input = form.querySelector('input[type="file"]');
    const note = form.querySelector(".too-large");
    if (!input || !note || !(limit > 0)) continue;

    // True when the chosen file may be sent; otherwise the sentence is shown under the form.
    const check = () => {
      const file = input.files && input.files[0];
      const tooLarge = Boolean(file) && file.size > limit;
      note.textContent = tooLarge ? sentence.replace("{size}", sizeWords(file.size)) : "";
      note.hidden = !tooLarge;
      return !tooLarge;
    };
    input.addEventListener("change", check);
    form.addEventListener("submit", (event) => {
      if (!check()) event.preventDefault();
    });
  }
})();
