// xlaport's site: a folded solution opens when its title is tapped.
//
// sphinx-exercise titles a solution "Solution to Exercise N" with a link back to the exercise, and
// sphinx-togglebutton folds it. Tapping that link (most of the title) used to jump back to the exercise, leave the
// solution closed and throw from togglebutton's handler, which only knows the title, its icon and its button. Here a
// tap anywhere on a folded admonition's title, link included, presses the title's toggle button instead.
document.addEventListener(
  "click",
  (event) => {
    const target = event.target;
    if (!(target instanceof Element)) return;
    const title = target.closest(".admonition.dropdown .admonition-title, .admonition.toggle .admonition-title");
    if (!title || target.closest(".toggle-button")) return; // the button's own click: togglebutton handles it
    if (target === title || target.classList.contains("tb-icon") || target.tagName.toLowerCase() === "polyline") {
      return; // the parts togglebutton already handles
    }
    const button = title.querySelector(".toggle-button");
    if (!button) return;
    event.preventDefault();
    event.stopPropagation();
    button.click();
  },
  true,
);

// Search results quote the page's own text, not its toolbar: Sphinx's search takes the snippet from the whole of the
// theme's <main>, which begins with the article's header buttons (launch, download, full screen, outline) and a
// print-only title and outline. Remove that furniture before it reads the text.
document.addEventListener("DOMContentLoaded", () => {
  if (typeof Search === "undefined" || typeof Search.htmlToText !== "function") return;
  const original = Search.htmlToText;
  Search.htmlToText = (htmlString, anchor) => {
    const page = new DOMParser().parseFromString(htmlString, "text/html");
    const furniture =
      ".bd-header-article, .bd-sidebar-secondary, .prev-next-area, .bd-footer-article, .d-print-none, .onlyprint";
    page.querySelectorAll(furniture).forEach((el) => el.remove());
    return original(page.documentElement.outerHTML, anchor);
  };
});
